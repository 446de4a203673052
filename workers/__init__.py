"""Celery workers that run the SCTP test battery against registered clusters.

The Celery app loads on first use (`workers.app`, as `celery -A workers` asks for it), so the
battery, the probe and the vocabulary import on their own, without Django or Celery.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from workers.celery import app

        return app
    raise AttributeError(f"module 'workers' has no attribute {name!r}")
