"""Real Celery worker processes for the benchmarks, on a queue of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from common import ROOT


class Worker:
    def __init__(self, name: str, queue: str, concurrency: int, env: dict[str, str]) -> None:
        self.log = ROOT / "var" / f"bench-{name}.log"
        self.log.parent.mkdir(exist_ok=True)
        self._out = open(self.log, "w")
        self.name = name
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers",
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
            env={**os.environ, **env, "CELERY_QUEUE": queue},
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {self.name} did not start:\n{self.log.read_text()[-2000:]}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._out.close()


def purge_queue(redis_url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.delete(queue)
    for key in client.scan_iter(f"_kombu.binding.{queue}*"):
        client.delete(key)
