"""Load: the readiness page and the readiness API under 50 concurrent clients for 30 s on gunicorn.

Serves the database bench_history.py filled (sctp_bench: a year of history) in production mode
(DEBUG off, collected static files) with gunicorn's threaded workers; the clients are threads of
this process with keep-alive connections. Reports requests per second, p50/p95 latency, errors.

Run: .venv/bin/python bench/bench_load.py [--clients 50] [--seconds 30] [--workers 3]
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, database_url, median, p95, table  # noqa: E402

PATHS = ["/", "/api/v1/readiness/"]


def serve(port: int, workers: int, threads: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                   check=True)
    out = open(log, "w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "dashboard.wsgi", "-b", f"127.0.0.1:{port}",
         "-w", str(workers), "-k", "gthread", "--threads", str(threads), "--keep-alive", "30",
         "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/readiness/")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.3)


def client(port: int, path: str, until: float, samples: list[float], errors: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors.append(f"{path}: HTTP {resp.status}")
            else:
                samples.append(time.monotonic() - started)
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{path}: {type(exc).__name__}: {exc}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--database", default="sctp_bench")
    args = parser.parse_args(argv)

    from common import free_port

    port = free_port()
    var = Path(tempfile.mkdtemp(prefix="sctp-bench-load-"))
    env = {**os.environ, "DATABASE_URL": database_url(args.database), "DEBUG": "0", "SECURE_SSL_REDIRECT": "0",
           "SECRET_KEY": "bench-load-" + "x" * 50, "ALLOWED_HOSTS": "127.0.0.1,localhost", "VAR_DIR": str(var),
           "DB_CONN_MAX_AGE": "60", "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    log = ROOT / "var" / "bench-gunicorn.log"
    log.parent.mkdir(exist_ok=True)
    proc = serve(port, args.workers, args.threads, env, log)
    samples: dict[str, list[float]] = {p: [] for p in PATHS}
    errors: list[str] = []
    try:
        until = time.monotonic() + args.seconds
        threads = [threading.Thread(target=client, args=(port, PATHS[i % len(PATHS)], until, samples[PATHS[i % len(PATHS)]],
                                                          errors)) for i in range(args.clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    rows = []
    for path in PATHS:
        s = samples[path]
        rows.append([path, args.clients // len(PATHS), len(s), f"{len(s) / elapsed:.1f}",
                     f"{median(s) * 1000:.0f}" if s else "-", f"{p95(s) * 1000:.0f}" if s else "-",
                     sum(1 for e in errors if e.startswith(path + ":"))])
    total = sum(len(s) for s in samples.values())
    rows.append(["all", args.clients, total, f"{total / elapsed:.1f}", "", "", len(errors)])
    print(table(f"load: {args.clients} clients for {args.seconds:.0f} s, gunicorn {args.workers} workers x "
                f"{args.threads} threads, DEBUG off, database {args.database}",
                ["path", "clients", "requests", "req/s", "p50 ms", "p95 ms", "errors"], rows))
    for e in sorted(set(errors))[:5]:
        print("error:", e)
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
