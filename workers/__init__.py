"""Celery workers that run the SCTP test battery against registered clusters."""

from __future__ import annotations

from .celery import app

__all__ = ["app"]
