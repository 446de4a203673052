"""The Celery app. Run state lives in the database (dashboard.models.Run), not in a result backend."""

from __future__ import annotations

import os

from celery import Celery

from .broker import install as install_redis_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# A failed acknowledgement during a Redis hang must not silence the worker (workers/broker.py).
install_redis_transport()

app = Celery("workers")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks", force=False)


def send(name: str, **options: object) -> object:
    """Sends a task by name (the web process never imports task modules); with
    task_always_eager (tests, a broker-less shell) it runs here instead, as .apply_async would."""
    if app.conf.task_always_eager:
        options.pop("retry", None)
        options.pop("countdown", None)
        return app.tasks[name].apply(args=options.pop("args", ()), kwargs=options.pop("kwargs", {}))
    return app.send_task(name, **options)  # type: ignore[arg-type]
