"""What the failure drills share: a private Redis to stop and start (waiting and API requests
are in tests/e2e.py)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.e2e import wait_for
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent


class PrivateRedis:
    """A redis-server of this test alone on its own port: the shared one at 6379 is never touched."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        import redis

        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        wait_for(lambda: _pings(client), 10, f"redis-server on port {self.port}")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a frozen server cannot act on SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def freeze(self) -> None:
        """Alive but mute: connections open and nothing answers (a hung or partitioned server)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis().start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def pointed_at(url: str, settings: Any) -> Iterator[None]:
    """This process's broker, lease and cache all use `url` (the pytest-django settings fixture)."""
    from dashboard.celery import app
    from tests.worker import use_broker
    from workers.lease import _redis

    old_url, old_options = app.conf.broker_url, dict(app.conf.broker_transport_options or {})
    options = dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    settings.REDIS_URL = url
    settings.CELERY_BROKER_URL = url
    if "redis" in settings.CACHES["default"]["BACKEND"].lower():
        settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": url}}
    use_broker(url, options)
    _redis.cache_clear()
    try:
        yield
    finally:
        use_broker(old_url, old_options)
        _redis.cache_clear()
