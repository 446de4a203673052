"""A submission's one state, in words, from the evidence policy: counted; would count once a
maintainer verifies it; or does not count, and why. And, after a review, what changed on the
readiness page ("two-out-of-tree-plugins: unmet → met", or "no change: emulated evidence")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.timezone import now

from dashboard.domain.agreement import contradictions
from dashboard.domain.policy import (
    AGE,
    EMULATED,
    OUTCOME,
    PERIODIC,
    PROXIERS,
    RELEASE,
    TESTS_WRITTEN,
    TRUST,
    TWO_PLUGINS,
    Assessment,
    Policy,
    plugin_facts,
    run_item,
    submission_item,
)

# The criteria a submission can feed (the periodic job is our own runs only).
CRITERIA = (TESTS_WRITTEN, TWO_PLUGINS, PROXIERS)
SHORT = {
    EMULATED: "emulated evidence",
    RELEASE: "its Kubernetes release is too old",
    AGE: "too old",
    TRUST: "not verified",
}


@dataclass
class State:
    kind: str  # counted | would-count | does-not-count
    headline: str
    why: str
    criteria: list[dict[str, Any]] = field(default_factory=list)  # counted (or would be) for


def _why(assessments: list[Assessment]) -> str:
    """The reasons it does not count, each once."""
    seen: list[str] = []
    for a in assessments:
        for part in a.why.removeprefix("not counted: ").split("; "):
            if part and part not in seen:
                seen.append(part)
    return "; ".join(seen)


def state_of(sub: Any) -> State:
    pol = Policy(now=now())
    item = submission_item(sub, plugin_facts(sub.plugin))
    pending = sub.status == "pending_review"
    relax = frozenset({TRUST}) if pending else frozenset()
    assessed = {key: pol.assess(item, key, relax) for key in CRITERIA}
    counting = [
        {"key": key, "why": a.why.removeprefix("counts: ")}
        for key, a in assessed.items()
        if a.counts
    ]
    if sub.status == "rejected":
        reason = f": “{sub.review_reason}”" if sub.review_reason else ""
        return State("does-not-count", "Does not count", f"a maintainer rejected it{reason}")
    if counting:
        if pending:
            return State(
                "would-count",
                "Would count once a maintainer verifies it",
                "until then it is shown but not counted",
                counting,
            )
        return State("counted", "Counted", "verified by a maintainer", counting)
    blocked = [a for a in assessed.values() if not a.counts]
    general = [a for a in blocked if a.blocked - {OUTCOME}]
    why = _why(general or blocked)
    if pending:
        why += " (verifying it would not change that)"
    return State("does-not-count", "Does not count", why)


def never_counts(sub: Any, when: Any = None) -> str:
    """Why verifying this submission could never make it count (issue 39), from its own facts:
    emulated, a release below the floor, a run older than the freshness window; "" otherwise.
    Read from the row's columns only (the review queue defers the results)."""
    pol = Policy(now=when or now())
    why: list[str] = []
    if sub.emulated:
        why.append("emulated evidence never counts")
    minor = sub.kubernetes_minor
    if minor is not None and minor < pol.minimum:
        why.append(
            f"Kubernetes 1.{minor} is older than 1.{pol.minimum}, the oldest release that counts"
        )
    if sub.run_at is not None and sub.run_at < pol.fresh_cutoff:
        why.append(f"its run ({sub.run_at:%Y-%m-%d}) is older than {pol.fresh_days} days")
    return "; ".join(why)


def proxier_declared_only(sub: Any) -> str:
    """When the file does not show kube-proxy's mode, the flag a maintainer sees before and at
    verify time (issue 39): the proxier counts on the vendor's word. "" when the file shows it."""
    if (sub.report or {}).get("proxier_detected"):
        return ""
    return (
        f"Its proxier ({sub.proxier}) is declared only: the file does not show kube-proxy's "
        "mode, so it counts on the vendor's word"
    )


def short_reason(sub: Any) -> str:
    """Why a submission changes no criterion, in a few words ("emulated evidence")."""
    pol = Policy(now=now())
    item = submission_item(sub, plugin_facts(sub.plugin))
    assessed = [pol.assess(item, key) for key in CRITERIA]
    if any(a.counts for a in assessed):
        return "the criteria it counts for keep their status"
    for category in (EMULATED, RELEASE, AGE, TRUST):
        if any(category in a.blocked for a in assessed):
            return SHORT[category]
    return _why(assessed) or "it does not count"


def readiness_change(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """["key: unmet → met", …] for the criteria whose status changed."""
    return [
        f"{key}: {before.get(key, '?').replace('_', ' ')} → {status.replace('_', ' ')}"
        for key, status in after.items()
        if before.get(key) != status
    ]


def _criteria(evaluation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["key"]: c for t in evaluation.get("transitions") or [] for c in t["criteria"]}


def _missing_tests(criterion: dict[str, Any]) -> int | None:
    rows = criterion.get("rows")
    if not rows:
        return None
    return sum(1 for r in rows if not r.get("recorded"))


PROXIER_WORDS = {"met": "demonstrated", "stale": "stale", "unmet": "not demonstrated"}


def evaluation_change(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What a decision did to each criterion, compared evaluation to evaluation (issue 39):
    ["tests-written: 8 → 2 missing", "ipvs: now demonstrated", "cilium: not counted → counted",
    "iptables-and-ipvs: unmet → met"]: statuses, the tests without a verdict, each proxier's and
    each plugin's verdict. Empty when none of them changed (a detail's wording is not a change)."""
    old, new = _criteria(before), _criteria(after)
    out: list[str] = []
    for key, c in new.items():
        was = old.get(key) or {}
        said: list[str] = []
        if was.get("status") != c["status"]:
            said.append(
                f"{key}: {str(was.get('status', '?')).replace('_', ' ')} → "
                f"{c['status'].replace('_', ' ')}"
            )
        if key == TESTS_WRITTEN:
            m0, m1 = _missing_tests(was), _missing_tests(c)
            if m0 is not None and m1 is not None and m0 != m1:
                said.append(f"{key}: {m0} → {m1} missing")
        if key == PROXIERS:
            for mode, verdict in (c.get("proxiers") or {}).items():
                prior = ((was.get("proxiers") or {}).get(mode) or {}).get("status")
                if prior != verdict["status"]:
                    word = PROXIER_WORDS.get(verdict["status"], verdict["status"])
                    said.append(
                        f"{mode}: now {word}"
                        if verdict["status"] == "met" or prior != "met"
                        else f"{mode}: no longer demonstrated ({word})"
                    )
        if key == TWO_PLUGINS:
            prior_rows = {r["plugin"]: r for r in was.get("rows") or []}
            for r in c.get("rows") or []:
                prior_status = (prior_rows.get(r["plugin"]) or {}).get("status", "no evidence")
                if prior_status != r["status"]:
                    said.append(f"{r['plugin']}: {prior_status} → {r['status']}")
        out += said
    return out + _watch_change(before.get("watch") or {}, after.get("watch") or {})


def _watch_change(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed in `/`'s post-GA watch (per supported release, proxier and plugin): a
    decision can leave every criterion's status as it was and still change these cells
    ("ipvs on 1.34: now demonstrated", "calico on ipvs, 1.34: no evidence → holds")."""
    out: list[str] = []
    old = {r["release"]: r for r in before.get("releases") or []}
    for r in after.get("releases") or []:
        was = old.get(r["release"]) or {}
        if was and bool(was.get("holds")) != bool(r["holds"]):
            out.append(
                f"Kubernetes {r['release']}: the GA criteria "
                + ("now hold" if r["holds"] else "no longer hold")
            )
        shown = {p["proxier"]: p["demonstrated"] for p in was.get("proxiers") or []}
        for p in r["proxiers"]:
            if p["proxier"] in shown and shown[p["proxier"]] != p["demonstrated"]:
                out.append(
                    f"{p['proxier']} on {r['release']}: "
                    + ("now demonstrated" if p["demonstrated"] else "no longer demonstrated")
                )
    cells = {
        (row["plugin"], c["proxier"], c["release"]): c["status"]
        for row in before.get("plugins") or []
        for c in row["cells"]
    }
    for row in after.get("plugins") or []:
        for c in row["cells"]:
            prior = cells.get((row["plugin"], c["proxier"], c["release"]), "no evidence")
            if prior != c["status"]:
                out.append(
                    f"{row['plugin']} on {c['proxier']}, {c['release']}: {prior} → {c['status']}"
                )
    return out


def run_state(run: Any, outcomes: dict[str, str], reasons: dict[str, str]) -> State:
    """A finished run's one state: counted (for which criteria) or does not count, and why."""

    pol = Policy(now=now())
    against = contradictions(
        [
            {
                "id": run.pk,
                "cluster_id": run.cluster_id,
                "kubernetes_version": run.kubernetes_version,
                "battery": run.battery,
            }
        ]
    )
    item = run_item(run, outcomes, reasons, plugin_facts(run.plugin), against.get(run.pk))
    keys: tuple[str, ...] = (TESTS_WRITTEN,)
    if run.battery in ("basic", "all") and run.trigger == "periodic":
        keys += (PERIODIC,)
    if run.battery in ("connectivity", "all", "upstream"):
        keys += (TWO_PLUGINS, PROXIERS)
    assessed = {key: pol.assess(item, key) for key in keys}
    counting = [
        {"key": key, "why": a.why.removeprefix("counts: ")}
        for key, a in assessed.items()
        if a.counts
    ]
    if counting:
        return State("counted", "Counts as evidence", "for the criteria below", counting)
    blocked = list(assessed.values())
    general = [a for a in blocked if a.blocked - {OUTCOME}]
    return State("does-not-count", "Does not count", _why(general or blocked))


def run_result(state: str, outcomes: dict[str, str], error: str = "") -> tuple[str, str]:
    """(passed | failed | error | inconclusive | queued | running | cancelled, one line why)."""
    if state in ("queued", "running"):
        return state, ""
    if state == "cancelled":
        return "cancelled", error or "the run was cancelled"
    if state == "error":
        return "error", error or "the run ended in an error"
    failed = sorted(k for k, o in outcomes.items() if o == "failed")
    errored = sorted(k for k, o in outcomes.items() if o == "error")
    passed = [k for k, o in outcomes.items() if o == "passed"]
    if failed:
        return "failed", "failed: " + ", ".join(failed)
    if errored:
        return "error", "the harness could not decide: " + ", ".join(errored)
    if not passed:
        return "inconclusive", "no test reached a verdict (all skipped or not run)"
    skipped = sum(1 for o in outcomes.values() if o in ("skipped", "not_run"))
    return "passed", f"{len(passed)} passed" + (
        f", {skipped} skipped or not run (the environment cannot)" if skipped else ""
    )
