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
