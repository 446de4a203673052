"""Fan-out: the basic battery requested on 200 lab clusters at once, two real worker processes.

Its own PostgreSQL database (sctp_bench_fanout) and Redis queue; the lab serves the 200
emulated clusters from this process (tests.labtools), the workers are the suite's
(tests.worker), and both are allowed the lab's loopback network as the suite allows it. Reports runs per minute, how many finished, and run times.

Run: .venv/bin/python bench/bench_fanout.py [--clusters 200] [--workers 2] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import median, migrate, p95, recreate_database, setup_django, table

DB_NAME = "sctp_bench_fanout"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="processes of each worker")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for every run to end")
    args = parser.parse_args(argv)

    url = recreate_database(DB_NAME)
    queue = f"bench-fanout-{uuid.uuid4().hex[:8]}"
    # The lab serves its clusters on 127.0.0.1, where cluster servers are refused unless
    # allowed (kernel/netguard.py): the bench allows exactly the lab's network, as the suite
    # does, here and (through tests.worker) in the workers it starts.
    setup_django(url, CELERY_QUEUE=queue)
    migrate()
    from django.conf import settings
    from django.db.models import Count

    from tests.conftest import LAB_NETWORKS

    settings.CLUSTER_ALLOWED_NETWORKS = LAB_NETWORKS

    from dashboard.domain.models import Run
    from dashboard.domain.runs import request_run
    from tests.labtools import lab_clusters, profile
    from tests.worker import celery_worker

    profiles = [
        profile(
            name=f"fan-{i:03d}",
            plugin=("calico", "cilium", "flannel", "antrea")[i % 4],
            plugin_version="1.0.0",
            proxier=("iptables", "ipvs")[i % 2],
        )
        for i in range(args.clusters)
    ]
    # Requested runs may take every slot (RUNS_REQUESTED_MAX_RUNNING 0): no periodic job runs
    # here. With the default cap of 3, most of the 200 requested runs would wait out the
    # runner's two-minute retry: a measure of the cap, not of the fan-out.
    env = {"LOG_LEVEL": "WARNING", "RUNS_REQUESTED_MAX_RUNNING": "0"}
    with ExitStack() as stack:
        _lab, registered = stack.enter_context(lab_clusters(*profiles))
        clusters = list(registered.values())
        for i in range(args.workers):
            name = f"fanout{i}-{queue}"
            stack.enter_context(celery_worker(args.concurrency, env, queue=queue, name=name))
        started = time.monotonic()
        ids = [request_run(c, "basic").pk for c in clusters]
        requested = time.monotonic() - started
        deadline = started + args.timeout
        while Run.objects.filter(pk__in=ids, state__in=["queued", "running"]).exists():
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - started

    runs = list(Run.objects.filter(pk__in=ids))
    states = dict(Run.objects.filter(pk__in=ids).values_list("state").annotate(n=Count("id")))
    durations = [(r.finished - r.started).total_seconds() for r in runs if r.started and r.finished]
    waits = [(r.started - r.created).total_seconds() for r in runs if r.started]
    by_worker = dict(Run.objects.filter(pk__in=ids).values_list("worker").annotate(n=Count("id")))
    finished = states.get("finished", 0)
    print(
        table(
            f"fan-out: basic battery on {args.clusters} lab clusters at once, {args.workers} workers x "
            f"{args.concurrency} processes (PostgreSQL, Redis)",
            [
                "runs",
                "finished",
                "other states",
                "wall s",
                "runs/min",
                "run s p50",
                "run s p95",
                "queue wait s p95",
                "request all s",
            ],
            [
                [
                    len(ids),
                    finished,
                    {k: v for k, v in states.items() if k != "finished"} or "-",
                    f"{elapsed:.1f}",
                    f"{len(ids) / elapsed * 60:.1f}",
                    f"{median(durations):.2f}" if durations else "-",
                    f"{p95(durations):.2f}" if durations else "-",
                    f"{p95(waits):.1f}" if waits else "-",
                    f"{requested:.2f}",
                ]
            ],
        )
    )
    print(
        "runs per worker: "
        + ", ".join(f"{k.split('@')[0]}={v}" for k, v in sorted(by_worker.items()))
    )
    print("every run finished: " + ("yes" if finished == len(ids) else f"NO ({states})"))
    return 0 if finished == len(ids) else 1


if __name__ == "__main__":
    raise SystemExit(main())
