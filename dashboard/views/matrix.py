"""The matrix (/matrix/): plugins × proxier modes, the latest outcome of every catalog test.

Sources are our own finished runs and vendor submissions, each cell saying which one it shows
(our run, verified vendor, pending vendor). The page answers in a fixed number of queries
whatever the history: the newest run per cluster and battery, and the newest submission per
plugin, proxier and status, are correlated "ORDER BY … LIMIT 1" subqueries on indexed columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.catalog import (
    ALL_KEYS,
    BASIC_KEYS,
    CATALOG,
    CONNECTIVITY_KEYS,
    Battery,
    Outcome,
    Proxier,
    keys_of,
)
from dashboard.models import Cluster, Plugin, Run, Submission, TestResult

from .outcomes import cell

TRUST = {"run": "our run", "verified": "verified vendor", "pending": "pending vendor"}
TRUST_SHORT = {"run": "ours", "verified": "vendor ✓", "pending": "vendor ?"}


@dataclass
class Source:
    trust: str  # run | verified | pending
    id: int
    when: datetime
    plugin_id: int
    proxier: str
    kubernetes_version: str
    outcomes: dict[str, str]
    reasons: dict[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = ALL_KEYS  # the tests this source could speak about (a run: its battery's)

    @property
    def url(self) -> str:
        return f"/runs/{self.id}/" if self.trust == "run" else f"/submissions/{self.id}/"

    def outcome(self, key: str) -> str:
        return self.outcomes.get(key) or Outcome.NOT_RUN


def _newest_runs() -> list[int]:
    """Per cluster, the newest finished run that covers the basic and the connectivity tests."""
    finished = Run.objects.filter(cluster=OuterRef("pk"), state=Run.State.FINISHED).order_by("-created")
    annotations = {
        "basic_run": Subquery(finished.filter(battery__in=[Battery.BASIC, Battery.ALL]).values("id")[:1]),
        "conn_run": Subquery(finished.filter(battery__in=[Battery.CONNECTIVITY, Battery.ALL]).values("id")[:1]),
    }
    ids: set[int] = set()
    for basic_run, conn_run in Cluster.objects.annotate(**annotations).values_list("basic_run", "conn_run"):
        ids.update(i for i in (basic_run, conn_run) if i)
    return sorted(ids)


def _newest_submissions() -> list[int]:
    """Per plugin, proxier and status (verified, pending): the newest submission."""
    annotations = {}
    for status in (Submission.Status.VERIFIED, Submission.Status.PENDING):
        for mode in Proxier.values:
            newest = (
                Submission.objects.filter(plugin=OuterRef("pk"), status=status, proxier=mode)
                .order_by("-created").values("id")[:1]
            )
            annotations[f"s_{status}_{mode}"] = Subquery(newest)
    ids: set[int] = set()
    for row in Plugin.objects.annotate(**annotations).values(*annotations):
        ids.update(i for i in row.values() if i)
    return sorted(ids)


def load_sources() -> list[Source]:
    run_ids, sub_ids = _newest_runs(), _newest_submissions()
    sources: list[Source] = []
    if run_ids:
        results: dict[int, dict[str, tuple[str, str]]] = {}
        for run_id, key, outcome, reason in TestResult.objects.filter(run_id__in=run_ids).values_list(
            "run_id", "test_key", "outcome", "reason"
        ):
            results.setdefault(run_id, {})[key] = (outcome, reason)
        for r in Run.objects.filter(id__in=run_ids).only(
            "id", "plugin_id", "proxier", "kubernetes_version", "battery", "finished", "created"
        ):
            got = results.get(r.id, {})
            keys = keys_of(r.battery)
            sources.append(Source(
                "run", r.id, r.finished or r.created, r.plugin_id, r.proxier, r.kubernetes_version,
                {k: got[k][0] for k in keys if k in got}, {k: got[k][1] for k in keys if k in got}, keys,
            ))
    if sub_ids:
        for s in Submission.objects.without_content().filter(id__in=sub_ids).only(
            "id", "plugin_id", "proxier", "kubernetes_version", "status", "results", "created"
        ):
            trust = "verified" if s.status == Submission.Status.VERIFIED else "pending"
            outcomes = {k: v.get("outcome", Outcome.NOT_RUN) for k, v in (s.results or {}).items()}
            reasons = {k: "; ".join(v.get("reasons", [])[:2]) for k, v in (s.results or {}).items()}
            sources.append(Source(trust, s.id, s.created, s.plugin_id, s.proxier, s.kubernetes_version,
                                  outcomes, reasons))
    return sources


def _pick(candidates: list[Source], key: str) -> Source | None:
    """The newest source with an outcome for key; else the newest source at all (shown as not run)."""
    decided = [s for s in candidates if s.outcome(key) != Outcome.NOT_RUN]
    pool = decided or candidates
    return max(pool, key=lambda s: s.when) if pool else None


def _cell(sources: list[Source], key: str) -> dict[str, Any]:
    main = _pick([s for s in sources if s.trust in ("run", "verified")], key)
    pending = _pick([s for s in sources if s.trust == "pending"], key)
    if pending is not None and (pending.outcome(key) == Outcome.NOT_RUN
                                or (main is not None and main.outcome(key) != Outcome.NOT_RUN
                                    and pending.when <= main.when)):
        pending = None  # an older or empty pending file adds nothing to what the cell says
    out: dict[str, Any]
    if main is None:
        out = cell("missing", trust=None)
    else:
        out = cell(main.outcome(key), trust=main.trust, trust_label=TRUST[main.trust],
                   trust_short=TRUST_SHORT[main.trust], url=main.url, when=main.when,
                   kubernetes_version=main.kubernetes_version, reason=main.reasons.get(key, ""))
    if pending is not None:
        out["pending"] = cell(pending.outcome(key), trust="pending", trust_label=TRUST["pending"],
                              url=pending.url, when=pending.when, kubernetes_version=pending.kubernetes_version)
    return out


def build_matrix() -> dict[str, Any]:
    plugins = list(Plugin.objects.order_by("name").values("id", "slug", "name", "in_tree",
                                                           "implements_network_policy"))
    sources = load_sources()
    groups: dict[tuple[int, str], list[Source]] = {}
    for s in sources:
        groups.setdefault((s.plugin_id, s.proxier), []).append(s)
    rows = []
    for p in plugins:
        modes = [m for m in Proxier.values if (p["id"], m) in groups]
        for mode in modes or [None]:
            group = groups.get((p["id"], mode), []) if mode else []
            cells = []
            for key in ALL_KEYS:
                relevant = [s for s in group if key in s.keys]
                cells.append({"key": key, **_cell(relevant, key)})
            versions = sorted({s.kubernetes_version for s in group if s.kubernetes_version})
            rows.append({"plugin": p, "proxier": mode, "cells": cells, "kubernetes_versions": versions,
                         "first": mode == (modes[0] if modes else None)})
    return {"rows": rows, "tests": [{"key": t["key"], "title": t["title"], "battery": t["battery"]} for t in CATALOG],
            "basic_count": len(BASIC_KEYS), "connectivity_count": len(CONNECTIVITY_KEYS)}


def matrix(request: HttpRequest) -> HttpResponse:
    return render(request, "matrix/matrix.html", {"matrix": build_matrix(), "trust": TRUST})
