"""A real Celery worker process over the real Redis, pointed at the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.need import unavailable

ROOT = Path(__file__).resolve().parent.parent


def test_database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{port}/{s['NAME']}"


def redis_or_skip() -> None:
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1).ping()
    except Exception as exc:  # CI always has Redis (a skip there fails); a laptop may not
        unavailable(f"needs Redis at {settings.REDIS_URL}: {exc}")


def use_broker(url: str, transport_options: dict) -> None:
    """Points this process's Celery app at another broker (its connection pools start over)."""
    from kombu import pools

    from dashboard.celery import app

    # Celery prefers the CELERY_BROKER_URL environment variable (CI sets it) to conf.broker_url.
    os.environ["CELERY_BROKER_URL"] = url
    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None
    pools.reset()  # kombu's process-wide producer pools still hold the closed connections


@contextmanager
def celery_worker(
    concurrency: int = 1,
    extra_env: dict[str, str] | None = None,
    queue: str | None = None,
    embedded_dir: Path | None = None,
    name: str | None = None,
) -> Iterator[dict]:
    """Starts `celery -A dashboard worker` on a private queue; yields {"queue", "proc", "log"}.

    With `embedded_dir`, worker and test use the embedded broker (kombu's filesystem transport
    under that directory) instead of Redis, as `make demo` does on a machine without Redis.
    `name` tells apart several workers on one queue (the fan-out benchmark's).
    """
    from dashboard.celery import app

    if embedded_dir is None:
        redis_or_skip()
    queue = queue or f"test-{uuid.uuid4().hex[:8]}"
    name = name or queue
    env = os.environ.copy()
    env.update(
        {
            "DATABASE_URL": test_database_url(),
            "CELERY_BROKER_URL": settings.REDIS_URL,
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_QUEUE": queue,
            "RUN_HEARTBEAT_SECONDS": str(settings.RUN_HEARTBEAT_SECONDS),
            "RUN_HEARTBEAT_TIMEOUT": str(settings.RUN_HEARTBEAT_TIMEOUT),
            "RUN_LEASE_SECONDS": str(settings.RUN_LEASE_SECONDS),
            # the test's own key prefixes: what the worker leaves in Redis is the test's to remove
            "CACHE_KEY_PREFIX": str(settings.CACHES["default"].get("KEY_PREFIX", "")),
            "FIELD_ENCRYPTION_KEY": settings.FIELD_ENCRYPTION_KEY,
            "CLUSTER_ALLOWED_NETWORKS": settings.CLUSTER_ALLOWED_NETWORKS,
            "SECRET_KEY": settings.SECRET_KEY,
        }
    )
    if embedded_dir is not None:
        env.update({"CELERY_BROKER_URL": "filesystem://", "VAR_DIR": str(embedded_dir)})
    env.update(extra_env or {})
    log = ROOT / "var" / f"worker-{name}.log"
    log.parent.mkdir(exist_ok=True)
    logfile = open(log, "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "worker",
            "-Q",
            queue,
            "-c",
            str(concurrency),
            "-n",
            f"{name}@%h",
            "-l",
            "info",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=env,
        stdout=logfile,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    old_queue = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    if embedded_dir is not None:
        folder = str(embedded_dir / "broker" / "out")
        (embedded_dir / "broker" / "out").mkdir(parents=True, exist_ok=True)
        (embedded_dir / "broker" / "processed").mkdir(parents=True, exist_ok=True)
        (embedded_dir / "broker" / "control").mkdir(parents=True, exist_ok=True)
        use_broker(
            "filesystem://",
            {
                "data_folder_in": folder,
                "data_folder_out": folder,
                "processed_folder": str(embedded_dir / "broker" / "processed"),
                "control_folder": str(embedded_dir / "broker" / "control"),
                "store_processed": False,
            },
        )
    else:
        use_broker(settings.REDIS_URL, settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    try:
        deadline = time.monotonic() + 60  # a loaded CI machine takes its time to fork the pool
        while f"{name}@" not in log.read_text() or " ready." not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield {"queue": queue, "proc": proc, "log": log}
    finally:
        app.conf.task_default_queue = old_queue
        if embedded_dir is not None:
            use_broker(settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT_OPTIONS)
        if proc.poll() is None:
            # As a deployment stops it (systemd, Kubernetes): SIGTERM to the main process only,
            # a warm shutdown in which the task in hand ends its bookkeeping (a run seen ended
            # still has its lease and evaluation to finish). SIGTERM to the whole group would
            # kill the pool's children mid-task; the group is killed only if it lingers.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        logfile.close()
        if embedded_dir is None:
            forget_queue(queue)


def forget_queue(queue: str) -> None:
    """Deletes what kombu keeps in Redis for a private queue (its bindings, its lists)."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
    keys = [
        f"_kombu.binding.{queue}",
        f"_kombu.binding_permanent.{queue}",
        queue,
        *(k for k in client.scan_iter(match=f"{queue}\x06\x16*", count=1000)),
    ]
    client.delete(*keys)
