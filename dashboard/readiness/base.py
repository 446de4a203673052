"""Verdicts and the evaluation context shared by the criteria modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings


@dataclass
class EvidenceRef:
    kind: str  # "run" | "submission"
    id: int
    label: str = ""

    @property
    def url(self) -> str:
        return f"/{'runs' if self.kind == 'run' else 'submissions'}/{self.id}/"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "url": self.url, "label": self.label}


@dataclass
class Verdict:
    key: str
    title: str
    status: str  # met | unmet | at_risk | stale
    detail: str
    evidence: list[EvidenceRef] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # per-plugin / per-proxier facts for pages

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "evidence": [e.to_dict() for e in self.evidence],
            "rows": self.rows,
        }


@dataclass
class Context:
    now: datetime
    fresh_days: int = field(default_factory=lambda: settings.READINESS_FRESH_DAYS)
    periodic_runs: int = field(default_factory=lambda: settings.READINESS_PERIODIC_RUNS)

    @property
    def fresh_cutoff(self) -> datetime:
        return self.now - timedelta(days=self.fresh_days)

    def is_fresh(self, when: datetime | None) -> bool:
        return when is not None and when >= self.fresh_cutoff


def day(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d") if when else "never"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
