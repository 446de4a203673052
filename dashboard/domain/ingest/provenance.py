"""What the file itself says, fact by fact, and where it says it (contract: Evidence policy,
*Age*, *Once*, *The file's word over the submitter's*; the submissions errors 409 and 422).

Every fact carries its source as the verification page shows it ("from serverversion.json",
"declared, not in the file", …). A fact the file states wins over the declared one; a declared
one that contradicts it refuses the file (422, naming both). Pure: no models.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dashboard.domain.ingest.archives import Contents
from dashboard.domain.ingest.cluster_facts import cni_for
from dashboard.domain.ingest.e2elog import minor_of
from dashboard.domain.ingest.errors import IngestError
from dashboard.domain.ingest.identity import (
    JUnitScan,
    content_id,
    near_id,
    parse_timestamp,
    total_seconds,
)
from dashboard.domain.ingest.junit import JUnitResult
from dashboard.domain.ingest.upstream_names import (
    CONNECTIVITY_KEYS,
    RELEASE_NAMES,
    RELEASES,
    core,
    normalise,
)

FUTURE_SLACK = timedelta(minutes=10)
# A spec that really ran takes milliseconds at the very least (a connectivity test, seconds).
_MIN_SECONDS_PER_SPEC = 0.005
_RELEASE_PROPERTIES = ("kubernetes_version", "KubernetesVersion", "k8s_version")
_TRUE = ("true", "1", "yes")
_MAX_SHOWN = 300


@dataclass
class Fact:
    value: str | None
    source: str  # "from serverversion.json", "declared, not in the file", "not detected", …

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


@dataclass
class Provenance:
    release: Fact
    run_at: datetime | None
    run_at_fact: Fact
    plugin: Fact
    proxier: Fact
    dry_run: Fact
    content_id: str
    near_id: str
    host_facts: list[str] = field(default_factory=list)
    focus: str | None = None
    skip: str | None = None
    names_release: str | None = None  # what the test names alone imply

    def as_dict(self) -> dict[str, object]:
        return {
            "release": self.release.as_dict(),
            "run_at": self.run_at_fact.as_dict(),
            "plugin": self.plugin.as_dict(),
            "proxier": self.proxier.as_dict(),
            "dry_run": self.dry_run.as_dict(),
            "focus": self.focus,
            "skip": self.skip,
            "names_release": self.names_release,
            "host_facts": len(self.host_facts),
        }


# --- release --------------------------------------------------------------------------


def release_of(
    contents: Contents, scan: JUnitScan, names: list[str], declared: str | None
) -> tuple[Fact, str | None]:
    """(the release fact, the names' range). 422 when the file contradicts the declared one."""
    stated: list[tuple[str, str]] = []
    if contents.server_version:
        stated.append((contents.server_version, "from serverversion.json"))
    log = contents.e2e_log
    if log is not None and log.server_version:
        stated.append((log.server_version, "from e2e.log (server version)"))
    if log is not None and log.e2e_version:
        stated.append((log.e2e_version, "from e2e.log (e2e suite version)"))
    for prop in _RELEASE_PROPERTIES:
        if value := scan.properties.get(prop, "").strip():
            if minor_of(value):
                stated.append((value[:40], f"from the Ginkgo suite property {prop}"))
    names_range, exact = names_release(names)
    declared_minor = minor_of(declared)
    if stated:
        value, source = stated[0]
        if declared_minor and minor_of(value) != declared_minor:
            raise IngestError(
                f"the file says Kubernetes {value} ({source}) but the submission declares "
                f"{declared}: the release is read from the file; declare {value}",
                422,
                {"release_in_file": value, "release_source": source, "declared": declared},
            )
        return Fact(value, source), names_range
    if names_range and exact and declared_minor and not _within(declared_minor, names_range):
        raise IngestError(
            f"the file's SCTP test names are those of Kubernetes {names_range}, but the "
            f"submission declares {declared}: declare the release the run used",
            422,
            {"release_in_file": names_range, "release_source": "test names", "declared": declared},
        )
    if names_range:
        return Fact(declared, f"declared; the file's test names fit {names_range}"), names_range
    return Fact(declared, "declared, not in the file"), names_range


_EXACT = {r: frozenset(normalise(n) for n in RELEASE_NAMES[r]) for r in RELEASES}


def names_release(names: list[str]) -> tuple[str | None, bool]:
    """(the range of releases whose exact SCTP names fit these best, whether every name of
    the file is one of theirs). Open-ended at the table's first and last release."""
    found = {normalise(n) for n in names}
    found = {n for n in found if core(n)}
    if not found:
        return None, False
    scores = {r: len(found & _EXACT[r]) for r in RELEASES}
    top = max(scores.values())
    if top == 0:
        return None, False
    tied = [r for r in RELEASES if scores[r] == top]
    complete = top == len(found)
    low, high = tied[0], tied[-1]
    return (low if low == high else f"{low}-{high}"), complete


def _within(minor: str, names_range: str) -> bool:
    low, _, high = names_range.partition("-")
    high = high or low
    value = _minor_number(minor)
    lo = -1 if low == RELEASES[0] else _minor_number(low)
    hi = 10**6 if high == RELEASES[-1] else _minor_number(high)
    return lo <= value <= hi


def _minor_number(release: str) -> int:
    match = re.match(r"v?\d+\.(\d+)", release)
    return int(match.group(1)) if match else -1


# --- run time -------------------------------------------------------------------------


def first_time(contents: Contents, junit: JUnitResult, scan: JUnitScan) -> datetime | None:
    """The run time the file states first, unchecked."""
    return next((when for when, _ in _candidates(contents, junit, scan) if when), None)


def _candidates(
    contents: Contents, junit: JUnitResult, scan: JUnitScan
) -> list[tuple[datetime | None, str]]:
    stamps = [when for s in scan.timestamps if (when := parse_timestamp(s))]
    return [
        (min(stamps) if stamps else junit.run_at, "from the JUnit testsuite timestamp"),
        (scan.ginkgo_time, "from the Ginkgo report entries in the JUnit"),
        (contents.e2e_log.run_at if contents.e2e_log else None, "from e2e.log"),
        (
            contents.sonobuoy_run_at,
            f"from Sonobuoy {contents.sonobuoy_run_at_from or 'meta/run.log'}",
        ),
    ]


def run_time(
    contents: Contents, junit: JUnitResult, scan: JUnitScan, received_at: datetime
) -> tuple[datetime | None, Fact, str]:
    """(when, its fact, the start used for near-duplicates). Never an archive member's date.
    A time more than 10 minutes after the upload refuses the file (422)."""
    candidates = _candidates(contents, junit, scan)
    for when, source in candidates:
        if when is not None and when > received_at + FUTURE_SLACK:
            raise IngestError(
                f"the file says the run happened in the future ({when.isoformat()}, {source}): "
                "a run time more than 10 minutes ahead of the upload is refused",
                422,
            )
    for when, source in candidates:
        if when is not None:
            return when, Fact(when.isoformat(), source), when.isoformat()
    return (
        None,
        Fact(
            None,
            "not in the file: not fresh until a maintainer enters the run date when verifying",
        ),
        "",
    )


# --- dry runs -------------------------------------------------------------------------


def dry_run(
    contents: Contents, junit: JUnitResult, scan: JUnitScan, durations: bool = True
) -> Fact:
    """422 for a Ginkgo dry run; else the fact that says what was checked. ``durations``:
    also judge the spec durations (checked after "did any SCTP test run", which says more)."""
    why = None
    if scan.properties.get("DryRun", "").strip().lower() in _TRUE:
        why = "its Ginkgo DryRun property is true"
    elif contents.e2e_env.get("E2E_DRYRUN", "").strip().lower() in _TRUE:
        why = "the Sonobuoy e2e plugin ran with E2E_DRYRUN=true"
    passed = junit.spec_totals["passed"]
    summary = contents.e2e_log.summary if contents.e2e_log else None
    if why is None and summary is not None and summary.get("passed") == 0 and passed > 0:
        why = f'its e2e.log says "0 Passed" while the JUnit claims {passed} passed specs'
    if durations and why is None and passed > 0 and junit.spec_totals["failed"] == 0:
        seconds = total_seconds(scan)
        if seconds is not None and seconds < passed * _MIN_SECONDS_PER_SPEC:
            why = (
                f"all {passed} specs that ran passed in {seconds:.3f} s in total: no real run "
                "is that fast (a connectivity test takes seconds)"
            )
    if why:
        raise IngestError(
            f"a Ginkgo dry run is no evidence: {why}. Nothing ran against a cluster.", 422
        )
    return Fact("no", "checked: DryRun property, e2e.log summary, spec durations")


# --- plugin and proxier ---------------------------------------------------------------


def plugin_of(contents: Contents, junit_cni: str | None, declared: str | None) -> Fact:
    seen = dict(contents.cluster.cnis)
    for slug in contents.cnis:
        seen.setdefault(slug, "the archive's pod logs")
    log = contents.e2e_log
    if log is not None:
        for name in sorted(log.daemonsets):
            if found := cni_for(name, {}):
                seen.setdefault(found, f"e2e.log (the framework waited for DaemonSet {name})")
    if junit_cni:
        seen.setdefault(junit_cni, "the JUnit property cni_detected")
    if declared and seen and declared not in seen:
        where = "; ".join(f"{slug}: {place}" for slug, place in sorted(seen.items()))
        raise IngestError(
            f"the file shows the cluster running {' and '.join(sorted(seen))} as its CNI, but "
            f"the submission is for {declared} (seen in {where})",
            422,
            {"cni_in_file": sorted(seen)},
        )
    if seen:
        slug = declared if declared in seen else sorted(seen)[0]
        return Fact(slug, f"from {seen[slug]}")
    return Fact(declared, "declared; not detected in the file")


def proxier_of(contents: Contents, junit_proxier: str | None, declared: str | None) -> Fact:
    seen = dict(contents.cluster.proxier_modes)
    for mode in contents.proxiers:
        seen.setdefault(mode, "kube-proxy's log")
    if junit_proxier:
        seen.setdefault(junit_proxier, "the JUnit property proxier_detected")
    if declared and seen and set(seen) - {declared}:
        others = sorted(set(seen) - {declared})
        where = "; ".join(f"{mode}: {seen[mode]}" for mode in others)
        raise IngestError(
            f"the file shows kube-proxy running the {' and '.join(others)} proxier, but the "
            f"submission declares {declared} (seen in {where})",
            422,
            {"proxier_in_file": sorted(seen)},
        )
    if seen:
        mode = declared if declared in seen else sorted(seen)[0]
        return Fact(mode, f"from {seen[mode]}")
    return Fact(declared, "declared; not detected in the file")


# --- identity -------------------------------------------------------------------------


def identity(scan: JUnitScan, contents: Contents, started: str) -> tuple[str, str, list[str]]:
    host = contents.cluster.host_facts()
    nodes = [f for f in host if f.startswith("node:")]
    return content_id(scan), near_id(scan, started, nodes), host


# --- helpful refusals -----------------------------------------------------------------


def focus_and_skip(contents: Contents, scan: JUnitScan) -> tuple[str | None, str | None]:
    focus = scan.properties.get("FocusStrings") or contents.e2e_env.get("E2E_FOCUS") or None
    skip = scan.properties.get("SkipStrings") or contents.e2e_env.get("E2E_SKIP") or None
    labels = scan.properties.get("LabelFilter")
    if labels:
        focus = f"{focus or ''} (label filter {labels})".strip()
    return (_short(focus), _short(skip))


def _short(text: str | None) -> str | None:
    if not text:
        return None
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"


def connectivity_tags(release: str | None) -> list[str]:
    """The bracketed tags of the release's connectivity tests ([Disruptive] where they have it)."""
    names = RELEASE_NAMES.get(minor_of(release) or "", RELEASE_NAMES[RELEASES[-1]])
    tags: dict[str, None] = {}
    for name, key in names.items():
        if key in CONNECTIVITY_KEYS and "sctp" in name.lower():
            for tag in re.findall(r"\[[^\[\]]+\]", name):
                if tag != "[sig-network]" and not tag.startswith("[Feature:NetworkPolicy"):
                    tags[tag] = None
    return list(tags)


def commands(release: str | None) -> dict[str, Any]:
    """The commands that produce a file that counts for the release (README, "What a vendor's
    file must contain to count"): every upstream SCTP spec selected (`SCTP` is in each of their
    names, whatever their tags), no dry run, the connectivity tests of 1.19 to 1.21 not skipped
    as `[Disruptive]`, and the file as this dashboard reads it: Sonobuoy's retrieved tarball
    (its default resources and pod logs carry the release, the CNI and kube-proxy's mode) or
    Hydrophone's output directory packed as a .tar.gz (its JUnit and e2e.log)."""
    tags = connectivity_tags(release)
    focus = "SCTP"
    disruptive = "[Disruptive]" in tags
    # Sonobuoy's default skip excludes [Disruptive]; the release's tests need it run.
    skip = r"\[Flaky\]" if disruptive else r"\[Disruptive\]|\[Flaky\]"
    sonobuoy = f"sonobuoy run --plugin e2e --e2e-focus '{focus}' --e2e-skip '{skip}' --wait"
    hydrophone = f"hydrophone --focus '{focus}' --skip '{skip}' --output-dir sctp-results"
    return {
        "sonobuoy": sonobuoy,
        "hydrophone": hydrophone,
        "tags": " ".join(tags),
        "steps": {
            "sonobuoy": [sonobuoy, "sonobuoy retrieve . --filename sctp-sonobuoy.tar.gz"],
            "hydrophone": [hydrophone, "tar -czf sctp-hydrophone.tar.gz -C sctp-results ."],
        },
    }
