"""How outcomes look on every page: a symbol and a colour, never colour alone."""

from __future__ import annotations

from typing import Any

SYMBOL = {
    "passed": "✔",
    "failed": "✘",
    "error": "!",
    "skipped": "↷",
    "not_run": "∅",
    "missing": "—",
    "running": "…",
    "queued": "…",
}
LABEL = {
    "passed": "passed",
    "failed": "failed",
    "error": "error (the harness broke, not the cluster)",
    "skipped": "skipped",
    "not_run": "not run",
    "missing": "no evidence",
    "running": "running",
    "queued": "waiting",
}
# Outcomes that say something about the cluster; skips and gaps do not count in pass rates.
DECIDED = ("passed", "failed", "error")


def cell(outcome: str, **extra: Any) -> dict[str, Any]:
    return {"outcome": outcome, "symbol": SYMBOL.get(outcome, "?"), "label": LABEL.get(outcome, outcome), **extra}
