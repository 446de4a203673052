"""The Celery app. Run state lives in the database (dashboard.domain.models.Run), not in a result backend."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals
from django.core.exceptions import ImproperlyConfigured

from dashboard.broker import install as install_redis_transport
from dashboard.domain.checks import refuse_unsafe_keys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# A failed acknowledgement during a Redis hang must not silence the worker (dashboard/broker.py).
install_redis_transport()

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks", force=False)


@signals.import_modules.connect
def _refuse_unsafe_keys(**kwargs: Any) -> None:
    """With DEBUG off, no worker or beat on the built-in or a missing key (dashboard/domain/checks.py).
    import_modules: sent when a worker or beat initializes, before beat opens its schedule.
    SystemExit: Celery's signals log and swallow ordinary exceptions."""
    try:
        refuse_unsafe_keys()
    except ImproperlyConfigured as exc:
        raise SystemExit(str(exc)) from None


def send(name: str, **options: object) -> Any:  # an AsyncResult (celery is untyped)
    """Sends a task by name (the web process never imports task modules); with
    task_always_eager (tests, a broker-less shell) it runs here instead, as .apply_async would."""
    if app.conf.task_always_eager:
        options.pop("retry", None)
        options.pop("countdown", None)
        return app.tasks[name].apply(args=options.pop("args", ()), kwargs=options.pop("kwargs", {}))
    return app.send_task(name, **options)
