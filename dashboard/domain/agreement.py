"""The two batteries on one cluster must agree (issue 38): a run's pass of a catalog test is
contradicted while the newest finished run of the other battery (upstream's `e2e.test` against
ours: `basic`, `connectivity`, `all`) on the same cluster and the same Kubernetes release failed
that test. The evidence policy then does not count that pass (dashboard/domain/policy.py,
`Item.contradicted`), and pages flag the disagreement, whichever battery is right: which one is
wrong is a maintainer's question, not the dashboard's guess."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dashboard.domain.catalog import Outcome
from dashboard.domain.ingest.upstream_names import fed_keys
from dashboard.domain.models import Run, TestResult

UPSTREAM = "upstream"
NAMES = {"upstream": "upstream's e2e.test", "ours": "the dashboard's battery"}


def family(battery: str) -> str:
    """upstream | ours: the battery a run's outcomes come from."""
    return "upstream" if battery == UPSTREAM else "ours"


def contradictions(runs: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, str]]:
    """For runs given as {id, cluster_id, kubernetes_version, battery}: run id -> {catalog key:
    why its pass is contradicted}, for the keys the newest finished run of the other battery on
    the same cluster and release failed. Two queries when some of these clusters have upstream
    runs, one otherwise (no contradiction is possible with one battery)."""
    runs = [r for r in runs if r.get("cluster_id")]
    clusters = {r["cluster_id"] for r in runs}
    if not clusters:
        return {}
    finished = Run.objects.filter(cluster_id__in=clusters, state=Run.State.FINISHED)
    if not finished.filter(battery=UPSTREAM).exists():
        return {}
    newest: dict[tuple[int, str, str], int] = {}
    for run_id, cluster_id, version, battery in finished.order_by("-finished", "-id").values_list(
        "id", "cluster_id", "kubernetes_version", "battery"
    ):
        newest.setdefault((cluster_id, version, family(battery)), run_id)
    failed: dict[int, list[str]] = {}
    for run_id, key in (
        TestResult.objects.filter(run_id__in=set(newest.values()), outcome=Outcome.FAILED)
        .order_by("test_key")
        .values_list("run_id", "test_key")
    ):
        failed.setdefault(run_id, []).append(key)
    out: dict[int, dict[str, str]] = {}
    for r in runs:
        other = "ours" if family(r["battery"]) == "upstream" else "upstream"
        against = newest.get((r["cluster_id"], r["kubernetes_version"], other))
        if against is None or against == r["id"] or against not in failed:
            continue
        out[r["id"]] = {
            key: f"{NAMES[other]} failed {key} on the same cluster and release (run {against})"
            for key in failed[against]
        }
    return out


def side_by_side(
    runs: Iterable[Any], results: Mapping[tuple[int, str], Any], since: Any
) -> dict[str, Any] | None:
    """The cluster page's comparison: the newest finished run of each battery on the newest
    release both ran within the evidence window (finished after `since`), and per catalog test
    both outcomes, whether they agree, and why they cannot when one gives no verdict. None when
    the window lacks a run of either battery. `runs`: the cluster's runs, newest first;
    `results`: (run id, key) -> TestResult."""
    from dashboard.domain.catalog import ALL_KEYS

    newest: dict[tuple[str, str], Any] = {}
    for r in runs:
        if r.state == Run.State.FINISHED and r.finished and r.finished >= since:
            newest.setdefault((r.kubernetes_version, family(r.battery)), r)
    versions = [v for (v, fam) in newest if fam == "upstream" and (v, "ours") in newest]
    if not versions:
        return None
    version = max(versions, key=lambda v: max(newest[(v, f)].finished for f in NAMES))
    ours, upstream = newest[(version, "ours")], newest[(version, "upstream")]
    rows = []
    fed = fed_keys(upstream.kubernetes_version)
    for key in ALL_KEYS:
        a, b = results.get((ours.id, key)), results.get((upstream.id, key))
        if a is None and b is None:
            continue
        if key not in fed:
            # upstream has no spec for it at this release: no outcome of upstream's to show
            rows.append(
                {
                    "key": key,
                    "ours": a.outcome if a else Outcome.NOT_RUN,
                    "upstream": "",
                    "state": "no upstream spec",
                    "why": "upstream's e2e.test has no spec for it",
                }
            )
            continue
        mine = a.outcome if a else Outcome.NOT_RUN
        theirs = b.outcome if b else Outcome.NOT_RUN
        verdicts = {Outcome.PASSED, Outcome.FAILED}
        if mine in verdicts and theirs in verdicts:
            state, why = ("agree" if mine == theirs else "disagree"), ""
        elif mine == theirs:
            state, why = "agree", ""
        else:
            state = "cannot agree"
            silent, reason = (b, "upstream's e2e.test") if theirs not in verdicts else (a, "ours")
            text = (silent.reason if silent is not None else "") or "no result"
            why = f"{reason} gave no verdict ({text[:200]})"
        rows.append({"key": key, "ours": mine, "upstream": theirs, "state": state, "why": why})
    return {
        "kubernetes_version": version,
        "ours": ours,
        "upstream": upstream,
        "rows": rows,
        "disagree": [r["key"] for r in rows if r["state"] == "disagree"],
    }
