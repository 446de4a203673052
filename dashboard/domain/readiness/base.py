"""Verdicts and the evaluation context shared by the criteria modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from dashboard.domain.policy import Policy


@dataclass
class EvidenceRef:
    """A link to a run or submission (pages that list evidence without a verdict)."""

    kind: str  # "run" | "submission"
    id: int
    label: str = ""

    @property
    def url(self) -> str:
        return f"/{'runs' if self.kind == 'run' else 'submissions'}/{self.id}/"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "url": self.url, "label": self.label}


MAX_EVIDENCE = 40  # per criterion: counted items first, then what did not count


@dataclass
class Verdict:
    key: str
    title: str
    status: str  # met | unmet | at_risk | stale
    detail: str
    # dashboard.domain.policy.evidence_entry dicts: {"kind","id","url","label","counts","why","emulated"}
    evidence: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(
        default_factory=list
    )  # per-plugin / per-proxier facts for pages
    what_if: str = ""  # "would be met on emulated clusters only: not counted", or ""
    # iptables-and-ipvs only: {MODE: {"status","detail","evidence"[,"note"]}} per proxier
    proxiers: dict[str, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        seen: set[tuple[str, int]] = set()
        evidence = []
        for e in sorted(self.evidence, key=lambda e: not e["counts"]):
            if (e["kind"], e["id"]) not in seen:
                seen.add((e["kind"], e["id"]))
                evidence.append(e)
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "what_if": self.what_if,
            "evidence": evidence[:MAX_EVIDENCE],
            "evidence_total": len(evidence),
            "rows": self.rows,
            **({"proxiers": self.proxiers} if self.proxiers is not None else {}),
        }


@dataclass
class Context:
    now: datetime
    fresh_days: int = field(default_factory=lambda: settings.READINESS_FRESH_DAYS)
    periodic_runs: int = field(default_factory=lambda: settings.READINESS_PERIODIC_RUNS)
    # The plain evaluation: each criterion finds and reads its own evidence with the plain
    # lookups, nothing shared (what the property test compares the evaluation with).
    plain: bool = False
    _policy: Policy | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = Policy(now=self.now, fresh_days=self.fresh_days, memo=not self.plain)
        return self._policy

    def memo(self, key: str, compute: Any) -> Any:
        """Computes once per evaluation what several criteria share (the candidate evidence)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def fresh_cutoff(self) -> datetime:
        return self.now - timedelta(days=self.fresh_days)


def day(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d") if when else "never"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
