"""The Redis transport, with acknowledgements that cannot silence a worker.

kombu's Redis QoS acknowledges in two steps: remove the message from Redis's unacked index,
then forget it locally (which frees its prefetch slot). When Redis hangs during the first
step, the socket timeout raises, kombu logs "Couldn't ack" and swallows the error, and the
second step never happens: the message keeps its prefetch slot for ever. With a prefetch of
one (CELERY_WORKER_PREFETCH_MULTIPLIER = 1, concurrency 1) the worker then never consumes
again, though Redis is back seconds later; with concurrency N, N such hangs do it. This is
why the Redis-hang drill failed under load: a loaded worker acked a little later, inside the
hang.

Here a failed acknowledgement still frees the slot. The entry left in Redis's unacked index
is removed by the next acknowledgement that reaches Redis; until then, or if the worker dies,
kombu's visibility timeout restores it, and the task runs again harmlessly (execute_run finds
its run no longer queued).
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, virtual
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unacked_in_redis: set[str] = set()

    def ack(self, delivery_tag: str) -> None:
        self._settle(
            delivery_tag, lambda: kombu_redis.QoS.ack(self, delivery_tag), remove_later=True
        )

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        # A requeue that failed is left to the visibility timeout, which restores it.
        self._settle(
            delivery_tag,
            lambda: kombu_redis.QoS.reject(self, delivery_tag, requeue),
            remove_later=not requeue,
        )

    def _settle(self, delivery_tag: str, settle: Any, remove_later: bool) -> None:
        try:
            settle()
        except self.channel.connection_errors:
            # Forget it here all the same: its prefetch slot is free for the next message.
            if remove_later:
                self._unacked_in_redis.add(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)
            raise
        self._retry_index_removals()

    def _retry_index_removals(self) -> None:
        """Redis answers again: remove what earlier failed acknowledgements left in its index."""
        if not self._unacked_in_redis:
            return
        tags = list(self._unacked_in_redis)
        try:
            with self.pipe_or_acquire() as pipe:
                for tag in tags:
                    self._remove_from_indices(tag, pipe=pipe)
                pipe.execute()
        except self.channel.connection_errors as exc:
            log.info("unacked index entries %s not removed yet: %s", tags, exc)
            return
        self._unacked_in_redis.difference_update(tags)


class Channel(kombu_redis.Channel):
    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel


def install() -> None:
    """Makes `redis://` and `rediss://` broker URLs use this transport (in every process)."""
    TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "dashboard.broker:Transport"
