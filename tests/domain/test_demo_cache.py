"""`make demo` without Redis: the demo's own process counts in the database's cache, as its
children do (settings.py derives CACHES from the broker, which the demo switches to the embedded
one only after settings were read). Before, the seeded submissions' ingest metric, counted in
the demo's own thread, logged a Redis "connection refused" traceback on every seeded file."""

from __future__ import annotations

import logging
import threading

import pytest
from django.core.cache import caches

from dashboard.domain import metrics
from dashboard.domain.management.commands.demo import reread_cache_settings, use_database_cache

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_that_does_not_answer(settings):
    # Port 1 on the loopback: nothing listens there (no traffic leaves the machine).
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    reread_cache_settings()
    yield
    reread_cache_settings()  # the handler reads settings.CACHES again once the settings fixture restored it


def _observe_in_a_thread() -> None:
    # The demo's seeding runs in a thread of its own: a fresh cache connection there.
    thread = threading.Thread(target=metrics.observe_ingest, args=(0.01, 100, True))
    thread.start()
    thread.join()


def test_without_the_switch_the_metric_meets_the_redis_that_does_not_answer(
    redis_that_does_not_answer, caplog
) -> None:
    with caplog.at_level(logging.WARNING, logger=metrics.log.name):
        _observe_in_a_thread()
    assert "could not record the ingest metric" in caplog.text


def test_the_demo_process_counts_in_the_database_cache(redis_that_does_not_answer, caplog) -> None:
    use_database_cache()
    with caplog.at_level(logging.WARNING, logger=metrics.log.name):
        _observe_in_a_thread()
    assert "could not record" not in caplog.text
    assert caches["default"].get("metrics:ingest:accepted:count") == 1
