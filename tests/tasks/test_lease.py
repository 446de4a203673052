"""The per-cluster run lease, on Redis and in the database (embedded mode): one holder at a time,
renewed only by its holder, free once it expires."""

from __future__ import annotations

import time

import pytest

from tests import factories as f
from tests.worker import redis_or_skip
from workers.lease import Lease

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "database"])
def mode(request, settings):
    settings.EMBEDDED_BROKER = request.param == "database"
    if request.param == "redis":
        redis_or_skip()
    return request.param


def test_only_one_holder_at_a_time(mode):
    c = f.cluster()
    first, second = Lease(c.id, ttl=30, holder="run-1"), Lease(c.id, ttl=30, holder="run-2")
    assert first.acquire() is True
    try:
        assert second.acquire() is False
        assert Lease.holder_of(c.id) == "run-1"
    finally:
        first.release()
    assert Lease.holder_of(c.id) is None
    assert second.acquire() is True
    second.release()


def test_a_lease_whose_holder_stopped_renewing_expires(mode):
    c = f.cluster()
    dead = Lease(c.id, ttl=1, holder="run-dead")
    assert dead.acquire()
    assert not Lease(c.id, ttl=1, holder="run-next").acquire()
    time.sleep(1.3)
    successor = Lease(c.id, ttl=30, holder="run-next")
    assert successor.acquire() is True
    assert dead.renew() is False  # the old holder learns it lost the lease
    assert Lease.holder_of(c.id) == "run-next"
    successor.release()


def test_only_the_holder_can_release_or_renew(mode):
    c = f.cluster()
    lease = Lease(c.id, ttl=30, holder="run-1")
    assert lease.acquire()
    impostor = Lease(c.id, ttl=30, holder="run-2")
    impostor.held = True
    impostor.release()
    assert Lease.holder_of(c.id) == "run-1"
    assert impostor.renew() is False
    assert lease.renew() is True
    lease.release()
