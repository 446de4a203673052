"""The readiness page (/)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard import readiness
from dashboard.catalog import Stage
from dashboard.models import SignOff
from dashboard.readiness.history import statuses_of

SYMBOLS = {"met": "✔", "unmet": "✘", "at_risk": "⚠", "stale": "⌛"}
LABELS = {"met": "met", "unmet": "unmet", "at_risk": "at risk", "stale": "stale"}


def stage_track(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    stages = [Stage.ALPHA, Stage.BETA, Stage.STABLE]
    current = stages.index(evaluation["stage"])
    ready = {t["to"]: t["ready"] for t in evaluation["transitions"]}
    track = []
    for i, name in enumerate(stages):
        if i < current:
            state, symbol = "done", "✔"
        elif i == current:
            state, symbol = "current", "●"
        else:
            state, symbol = ("ready" if ready.get(name) else "todo"), ("✔" if ready.get(name) else "…")
        edge = "done" if i <= current else ("ready" if ready.get(name) else "todo")
        edge_label = "" if i == 0 else ("signed off" if i <= current else ("criteria met" if ready.get(name) else "criteria unmet"))
        track.append({"name": name, "x": 70 + i * 230, "state": state, "symbol": symbol, "edge": edge,
                      "edge_label": edge_label})
    return track


def decorate(evaluation: dict[str, Any], baseline: dict[str, str] | None) -> None:
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            c["symbol"] = SYMBOLS[c["status"]]
            c["status_label"] = LABELS[c["status"]]
            was = (baseline or {}).get(c["key"])
            c["changed"] = LABELS.get(was) if baseline is not None and was != c["status"] else None


def _own_copy(evaluation: dict[str, Any]) -> dict[str, Any]:
    """The published evaluation is shared by this process's requests: copy what decorate() writes."""
    return {**evaluation, "transitions": [
        {**t, "criteria": [dict(c) for c in t["criteria"]]} for t in evaluation["transitions"]]}


def index(request: HttpRequest) -> HttpResponse:
    evaluation = _own_copy(readiness.published())
    last = SignOff.objects.select_related("maintainer").order_by("-created").first()
    decorate(evaluation, statuses_of(last.snapshot) if last else None)
    return render(request, "front/readiness.html", {"readiness": evaluation, "stage": evaluation["stage"],
                                                     "track": stage_track(evaluation), "last_signoff": last})
