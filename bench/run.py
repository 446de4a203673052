"""`make bench`: every benchmark, one table each. Needs PostgreSQL and Redis (as CI has them).

  ingest   bench_ingest.py   the real v1.30 JUnit through dashboard.domain.ingest vs junitparser
  hostile  bench_hostile.py  peak memory and time of ingest for each hostile upload shape
  history  bench_history.py  a year of history (into sctp_bench): pages 1 day vs 365 days
  load     bench_load.py     wrk, 50 connections for 15 s per path on gunicorn, against sctp_bench
  fanout   bench_fanout.py   200 lab clusters' basic batteries at once, 2 real workers

Run: .venv/bin/python bench/run.py [--only NAME ...] [--smoke]

`--smoke` (`make bench-smoke`, in CI): the same benchmarks and code paths at small sizes, with
the targets a broken benchmark or a regression in kind would miss judged (crashes, errors, runs
that do not finish, memory, query counts that grow with history), so that a benchmark that
stopped working fails a submission; the time targets are printed ("MISSED (advisory)") but not
judged there (bench/common.py: timings_advisory). Its figures are not the ones README reports.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    ("ingest", "bench_ingest.py"),
    ("hostile", "bench_hostile.py"),
    ("history", "bench_history.py"),
    ("load", "bench_load.py"),
    ("fanout", "bench_fanout.py"),
]
SMOKE_DB = "sctp_bench_smoke"
SMOKE = {
    "ingest": ["--rounds", "5"],
    "hostile": ["--smoke"],
    "history": [
        "--clusters",
        "20",
        "--days",
        "30",
        "--submissions",
        "200",
        "--rounds",
        "9",
        "--database",
        SMOKE_DB,
    ],
    "load": ["--seconds", "3", "--connections", "20", "--database", SMOKE_DB],
    "fanout": ["--clusters", "8", "--workers", "2", "--concurrency", "1", "--timeout", "300"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=[name for name, _ in BENCHES])
    parser.add_argument("--smoke", action="store_true", help="small sizes, every target judged")
    args = parser.parse_args(argv)
    failed = []
    for name, script in BENCHES:
        if args.only and name not in args.only:
            continue
        print(f"\n#### {name} ({script})", flush=True)
        started = time.monotonic()
        extra = SMOKE[name] if args.smoke else []
        env = {**os.environ, "BENCH_TIMINGS_ADVISORY": "1"} if args.smoke else None
        code = subprocess.call(
            [sys.executable, str(HERE / script), *extra], cwd=HERE.parent, env=env
        )
        print(
            f"#### {name}: {'ok' if code == 0 else f'exit {code}'} in {time.monotonic() - started:.0f} s",
            flush=True,
        )
        if code:
            failed.append(name)
    if failed:
        print(f"\nfailed or missed a target: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
