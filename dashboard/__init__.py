"""The Django project: settings, URLs, WSGI and the Celery app (`celery -A dashboard`), with its
two layers as apps: `dashboard.domain` (models and rules) and `dashboard.web` (pages, API,
middleware).

The Celery app loads on first use (`dashboard.app`, as `celery -A dashboard` asks for it), so a
web process that sends no task never loads Celery.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from dashboard.celery import app

        return app
    raise AttributeError(f"module 'dashboard' has no attribute {name!r}")
