"""One run per cluster at a time: a lease that expires when its holder stops renewing it.

With Redis: `SET key token NX PX ttl`, renewed and released only by its holder (Lua compare
and set). In embedded mode (no Redis): a row in dashboard_clusterlease taken with a
conditional update, with the same expiry semantics.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.timezone import now

from dashboard.domain.models import ClusterLease

if TYPE_CHECKING:
    import redis

RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


def _key(cluster_id: int) -> str:
    # Redis is shared by everything on a machine: the prefix names this deployment.
    return f"{settings.REDIS_PREFIX}:cluster-lease:{cluster_id}"


class LeaseUnavailable(Exception):
    """The lease's store (Redis) did not answer: nobody can tell whether the cluster is free."""


class Lease:
    def __init__(self, cluster_id: int, ttl: int | None = None, holder: str | None = None) -> None:
        self.cluster_id = cluster_id
        self.ttl = ttl or settings.RUN_LEASE_SECONDS
        self.holder = holder or uuid.uuid4().hex
        self.held = False

    # -- public -------------------------------------------------------------------------------
    def acquire(self) -> bool:
        self.held = self._db_acquire() if settings.EMBEDDED_BROKER else self._redis_acquire()
        return self.held

    def renew(self) -> bool:
        if not self.held:
            return False
        self.held = self._db_renew() if settings.EMBEDDED_BROKER else self._redis_renew()
        return self.held

    def release(self) -> None:
        if settings.EMBEDDED_BROKER:
            ClusterLease.objects.filter(cluster_id=self.cluster_id, holder=self.holder).delete()
        else:
            _redis().eval(RELEASE, 1, _key(self.cluster_id), self.holder)
        self.held = False

    @staticmethod
    def holder_of(cluster_id: int) -> str | None:
        if settings.EMBEDDED_BROKER:
            return (
                ClusterLease.objects.filter(cluster_id=cluster_id, expires__gt=now())
                .values_list("holder", flat=True)
                .first()
            )
        value = _redis().get(_key(cluster_id))  # bytes: the client does not decode
        if isinstance(value, bytes):
            return value.decode() or None
        return value or None

    # -- Redis --------------------------------------------------------------------------------
    def _redis_acquire(self) -> bool:

        try:
            return bool(
                _redis().set(_key(self.cluster_id), self.holder, nx=True, px=self.ttl * 1000)
            )
        except redis.RedisError as exc:
            raise LeaseUnavailable(f"the lease store is unavailable: {exc}") from exc

    def _redis_renew(self) -> bool:
        return bool(_redis().eval(RENEW, 1, _key(self.cluster_id), self.holder, self.ttl * 1000))

    # -- database -----------------------------------------------------------------------------
    def _db_acquire(self) -> bool:

        expires = now() + timedelta(seconds=self.ttl)
        # Take over an expired lease, or create it; both are single statements, so two
        # workers racing for one cluster cannot both win.
        taken = ClusterLease.objects.filter(cluster_id=self.cluster_id, expires__lte=now()).update(
            holder=self.holder, expires=expires
        )
        if taken:
            return True
        try:
            with transaction.atomic():
                ClusterLease.objects.create(
                    cluster_id=self.cluster_id, holder=self.holder, expires=expires
                )
            return True
        except IntegrityError:
            return False

    def _db_renew(self) -> bool:

        return bool(
            ClusterLease.objects.filter(cluster_id=self.cluster_id, holder=self.holder).update(
                expires=now() + timedelta(seconds=self.ttl)
            )
        )
