"""A task layer for tests that must not reach a broker (settings.TASKS_SEND =
"tests.task_layer.record_send"): what the domain hands to background tasks is kept in SENT,
for the test to run itself (tests/domain/test_evidence_machine.py runs the runs with the
worker's own code) or to leave alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SENT: list[tuple[str, list[Any]]] = []


@dataclass
class Receipt:
    id: str


def record_send(task: str, **options: Any) -> Receipt:
    SENT.append((task, list(options.get("args") or [])))
    return Receipt(id=f"recorded-{len(SENT)}")
