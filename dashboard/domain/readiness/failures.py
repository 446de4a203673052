"""What an evaluation does when part of it raises (issue 36): the criterion that raised is
`unmet` ("could not be evaluated", never `met`), the error is recorded as a Failure naming the
evidence item it was looking at (found in the traceback's frames), and the publication keeps
serving the last good evaluation while saying that the newest could not be made
(dashboard/domain/publication.py)."""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

from dashboard.domain.policy import Item

# The frames looked at for the item (innermost first) and the locals a criterion names it by.
_ITEM_NAMES = ("item", "i", "candidate", "best")


@dataclass(frozen=True)
class Failure:
    """One part of an evaluation that raised: which criterion (or "evaluation", "badges"), the
    error, where it was raised, and the evidence item being looked at, when one was."""

    part: str
    error: str
    where: str
    item_kind: str = ""
    item_id: int | None = None
    item_label: str = ""

    @property
    def item_url(self) -> str:
        if self.item_id is None:
            return ""
        return f"/{'runs' if self.item_kind == 'run' else 'submissions'}/{self.item_id}/"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "item_url": self.item_url}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Failure:
        return cls(
            str(d["part"]),
            str(d["error"]),
            str(d["where"]),
            str(d.get("item_kind") or ""),
            d.get("item_id"),
            str(d.get("item_label") or ""),
        )

    @property
    def summary(self) -> str:
        on = f" on {self.item_label}" if self.item_label else ""
        return f"{self.part}: {self.error}{on} ({self.where})"


def failure_of(part: str, exc: BaseException) -> Failure:
    """The Failure of `exc`, raised while evaluating `part`."""
    tb = exc.__traceback__
    frames = traceback.extract_tb(tb)
    last = frames[-1] if frames else None
    where = f"{_short(last.filename)}:{last.lineno} in {last.name}" if last else "unknown"
    item = _culprit(tb)
    error = f"{type(exc).__name__}: {exc}"[:500]
    if item is None:
        return Failure(part, error, where)
    return Failure(part, error, where, item.kind, item.id, item.label)


def _short(filename: str) -> str:
    marker = "/dashboard/"
    at = filename.rfind(marker)
    return filename[at + 1 :] if at >= 0 else filename


def _culprit(tb: TracebackType | None) -> Item | None:
    """The evidence item in the innermost frame that holds one (by a usual name, else any)."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        local = frame.f_locals
        for name in _ITEM_NAMES:
            value = local.get(name)
            if isinstance(value, Item):
                return value
        for value in local.values():
            if isinstance(value, Item):
                return value
    return None


def unevaluated(key: str, title: str, failure: Failure) -> dict[str, Any]:
    """The verdict of a criterion that raised: unmet, with why, and no evidence counted."""
    return {
        "key": key,
        "title": title,
        "status": "unmet",
        "detail": f"could not be evaluated ({failure.error}); not counted as met",
        "what_if": "",
        "evidence": [],
        "evidence_total": 0,
        "rows": [],
        "failure": failure.to_dict(),
    }
