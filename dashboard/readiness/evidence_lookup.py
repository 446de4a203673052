"""The newest run or verified submission matching a filter, fetched in a bounded number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from dashboard.models import Run, Submission

from .base import EvidenceRef, day


@dataclass
class Evidence:
    kind: str  # run | submission
    id: int
    when: datetime
    plugin_id: int
    proxier: str
    qualifying: bool
    qualifying_reason: str
    pod_to_service_passed: bool
    source: str  # "cluster calico-iptables" / "calico 3.28 submission"

    @property
    def ref(self) -> EvidenceRef:
        return EvidenceRef(self.kind, self.id, f"{self.kind} {self.id} ({self.source}, {day(self.when)})")


# Runs count when finished; submissions when verified (contract: pending or rejected never count).
def finished_runs():  # type: ignore[no-untyped-def]
    return Run.objects.filter(state=Run.State.FINISHED)


def verified_submissions():  # type: ignore[no-untyped-def]
    return Submission.objects.filter(status=Submission.Status.VERIFIED)


def load(run_ids: Iterable[int | None], submission_ids: Iterable[int | None]) -> dict[tuple[str, int], Evidence]:
    out: dict[tuple[str, int], Evidence] = {}
    run_ids = {i for i in run_ids if i}
    submission_ids = {i for i in submission_ids if i}
    if run_ids:
        for r in Run.objects.filter(id__in=run_ids).select_related("cluster").only(
            "id", "finished", "created", "plugin_id", "proxier", "qualifying", "qualifying_reason",
            "pod_to_service_passed", "cluster__name",
        ):
            out[("run", r.id)] = Evidence(
                "run", r.id, r.finished or r.created, r.plugin_id, r.proxier, r.qualifying,
                r.qualifying_reason, r.pod_to_service_passed, f"cluster {r.cluster.name}",
            )
    if submission_ids:
        for s in Submission.objects.filter(id__in=submission_ids).only(
            "id", "created", "plugin_id", "proxier", "qualifying", "qualifying_reason",
            "pod_to_service_passed", "plugin_version",
        ):
            out[("submission", s.id)] = Evidence(
                "submission", s.id, s.created, s.plugin_id, s.proxier, s.qualifying,
                s.qualifying_reason, s.pod_to_service_passed, f"verified submission, version {s.plugin_version}",
            )
    return out


def newest(*items: Evidence | None) -> Evidence | None:
    present = [i for i in items if i is not None]
    return max(present, key=lambda e: e.when) if present else None
