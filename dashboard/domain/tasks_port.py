"""The one door from the domain to the task layer: work handed to a background task, by name.

The domain (run requests, notifications, the readiness refresh) never imports the Celery app:
it calls `send()` here. The task layer implements the door, and settings.TASKS_SEND names its
function (`dashboard.celery.send`), loaded at the first send: a web process that sends nothing
never loads Celery, and one that sends never imports the task modules (tasks go by name).
Where the task runs is the task layer's business: on a worker, or right here when it runs
tasks eagerly (tests, a broker-less shell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string


class Receipt(Protocol):
    """What the task layer answers for a sent task: its id (None when it ran eagerly)."""

    @property
    def id(self) -> str | None: ...


def send(
    task: str,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    countdown: float | None = None,
    retry: bool = False,
) -> Receipt:
    """Sends `task` (a task name such as "workers.tasks.execute_run") with its arguments; raises
    whatever the task layer raises when the broker cannot be reached (callers keep the work
    pending then). `retry` is the task layer's own retrying of the send (off: callers retry)."""
    implementation = import_string(settings.TASKS_SEND)
    options: dict[str, Any] = {"args": list(args), "kwargs": dict(kwargs or {}), "retry": retry}
    if countdown is not None:
        options["countdown"] = countdown
    receipt: Receipt = implementation(task, **options)
    return receipt
