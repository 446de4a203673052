"""The drills' fixtures."""

from __future__ import annotations

from typing import Any

import pytest


def use_broker(url: str, transport_options: dict[str, Any]) -> None:
    """tests.worker.use_broker, but usable twice: kombu keeps pools in a global registry keyed by
    URL, so closing the app's pool without forgetting it leaves a closed pool that the next
    publish to the same URL acquires from ("Acquire on closed pool")."""
    from kombu import pools

    from workers import app

    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options
    pools.reset()  # closes every pooled connection and forgets the pools
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def _broker_pools_that_survive_a_second_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.worker

    monkeypatch.setattr(tests.worker, "use_broker", use_broker)
