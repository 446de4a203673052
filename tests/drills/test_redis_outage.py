"""Drill: Redis (broker and lease) stops, or hangs, and comes back.

The web keeps serving; run requests are accepted and kept in the database; the dispatcher sends
them once Redis is back and the worker finishes them. A private redis-server is used: the shared
one at 6379 is never stopped.
"""

from __future__ import annotations

import time

import pytest
from django.test import Client

from dashboard.models import Run
from dashboard.runs import request_run as create_run
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker

from tests.e2e import maintainer_token, request_run, wait_for

from .support import pointed_at, private_redis

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

QUICK = 10.0  # seconds: an answer slower than this is a hang to an operator


def timed(call):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started


def web_still_serves(client: Client) -> None:
    for path in ("/", "/api/v1/readiness/"):
        resp, took = timed(lambda p=path: client.get(p))
        assert resp.status_code == 200, (path, resp.status_code)
        assert took < QUICK, f"{path} took {took:.1f} s with Redis down"


def requests_during_the_outage(client: Client, token: str, cluster: str, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        run_id, took = timed(lambda: request_run(client, token, cluster, "basic"))
        assert took < QUICK, f"a run request took {took:.1f} s with Redis down"
        ids.append(run_id)
    for run in Run.objects.filter(pk__in=ids):
        assert run.state == "queued" and run.dispatched is None, (run.state, run.dispatched)
    return ids


def dispatched_once_redis_is_back(ids: list[int], log) -> None:  # type: ignore[no-untyped-def]
    from workers.tasks import dispatch_pending

    # dispatch_pending leaves runs younger than 5 s to the request's own dispatch: wait for it.
    # (A publish that timed out against a hung Redis may still land when it wakes: that run is
    # then delivered twice, and the second delivery finds it claimed and does nothing.)
    wait_for(lambda: dispatch_pending() >= 0
             and not Run.objects.filter(pk__in=ids, state="queued", dispatched=None).exists(),
             20, "the dispatcher to send the runs requested during the outage", log)
    wait_for(lambda: not Run.objects.filter(pk__in=ids, state__in=["queued", "running"]).exists(), 60,
             "the worker to finish them", log)
    states = dict(Run.objects.filter(pk__in=ids).values_list("id", "state"))
    assert set(states.values()) == {"finished"}, states


def test_while_redis_is_stopped_the_web_serves_and_run_requests_wait_in_the_database(settings):
    from workers.tasks import execute_run

    token, client = maintainer_token(), Client()
    with private_redis() as redis_server, pointed_at(redis_server.url, settings):
        with lab_clusters(profile(name="drill-redis")) as (_, clusters):
            with celery_worker() as worker:
                before = request_run(client, token, "drill-redis", "basic")
                wait_for(lambda: Run.objects.get(pk=before).state == "finished", 30, "a run before the outage",
                         worker["log"])

                redis_server.stop()
                web_still_serves(client)
                ids = requests_during_the_outage(client, token, "drill-redis", 2)

                # A task delivered just before Redis went: the lease cannot be taken, the attempt
                # ends cleanly and the run goes back to the dispatcher (no crash loop, no claim).
                delivered = create_run(clusters["drill-redis"], "basic", dispatch_on_commit=False)
                Run.objects.filter(pk=delivered.pk).update(dispatched=delivered.created)
                assert execute_run(delivered.pk) == "lease-unavailable"
                delivered.refresh_from_db()
                assert delivered.state == "queued" and delivered.dispatched is None
                ids.append(delivered.pk)

                redis_server.start()
                dispatched_once_redis_is_back(ids, worker["log"])


def test_while_redis_hangs_the_api_still_answers_quickly_and_nothing_is_lost(settings):
    # Without socket timeouts a publish to a hung Redis blocks the request forever.
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("socket_timeout")
    token, client = maintainer_token(), Client()
    with private_redis() as redis_server, pointed_at(redis_server.url, settings):
        with lab_clusters(profile(name="drill-redis-hang")):
            with celery_worker() as worker:
                before = request_run(client, token, "drill-redis-hang", "basic")
                wait_for(lambda: Run.objects.get(pk=before).state == "finished", 30, "a run before the outage",
                         worker["log"])
                redis_server.freeze()
                try:
                    web_still_serves(client)
                    ids = requests_during_the_outage(client, token, "drill-redis-hang", 1)
                finally:
                    redis_server.thaw()
                dispatched_once_redis_is_back(ids, worker["log"])
