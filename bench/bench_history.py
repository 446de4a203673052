"""A year of history: do the readiness page, the matrix and the readiness API stay as fast?

Generates 200 clusters x 365 daily periodic runs x 8 tests (584,000 results) and 2,000
submissions with bulk inserts into its own PostgreSQL database (sctp_bench, dropped and
created anew), with evidence flags set by dashboard.domain.evidence as the worker sets them and one
periodic schedule per cluster. Keeps a copy of the database after one day of history and after
a week (CREATE DATABASE ... TEMPLATE), and measures each page on the three points at the end,
their requests interleaved so that the machine's drift does not go into the ratios, evaluating
afresh on every request (a cold evaluation: no published copy, no cache): median time, the
year / week ratio and query counts.
Targets: after the full history each page's median <= 150 ms and <= 1.2 x the week's, at most
20 queries, the same count after 1 day, a week and the full history.
A page over target gets its slowest queries EXPLAIN ANALYZEd.

Run: .venv/bin/python bench/bench_history.py [--clusters N] [--days N] [--database NAME]
     (bench/run.py --smoke runs it with 20 clusters and 30 days: the same code, every target)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The target is about the evaluation and its queries, not the shared cache in front of it.
os.environ.setdefault(
    "READINESS_MAX_AGE_SECONDS", "0"
)  # measure the evaluation, not its stored copy
# Every request looks at the stored row (a deterministic query count, not one that depends on
# whether a request outlasted the one-second recheck window).
os.environ.setdefault("READINESS_RECHECK_SECONDS", "0")
from common import (
    drop_database,
    median,
    migrate,
    recreate_database,
    setup_django,
    table,
    timings_advisory,
)

DB_NAME = "sctp_bench"
PAGES = ["/", "/matrix/", "/api/v1/readiness/"]
ROUNDS = 25
CAPTURED_ROUNDS = 5  # requests whose queries are counted (not timed)
TARGET_RATIO = 1.2
TARGET_MS = 150.0
MAX_QUERIES = 20
PLUGINS = [
    "calico",
    "cilium",
    "flannel",
    "kubenet",
    "ovn-kubernetes",
    "antrea",
    "kube-router",
    "weave-net",
]
PROXIERS = ["iptables", "ipvs", "nftables"]
BATCH = 10_000


class Generator:
    def __init__(self, clusters: int, seed: int = 614) -> None:
        from django.utils.timezone import now

        self.rng = random.Random(seed)
        self.count = clusters
        self.now = now().replace(microsecond=0)
        self.clusters: list[Any] = []
        self.schedules: dict[int, Any] = {}
        self.vendors: dict[int, Any] = {}
        self.submission_serial = 0
        self._fingerprints: dict[int, dict[str, Any]] = {}
        self.rows = {"runs": 0, "results": 0, "submissions": 0}

    def fleet(self) -> None:
        """Plugins, one vendor each, the clusters, and a daily periodic schedule on every cluster."""
        from dashboard.domain.models import Cluster, Plugin, Vendor
        from dashboard.domain.schedules import create_schedule

        plugins = []
        for slug in PLUGINS:
            plugin, _ = Plugin.objects.get_or_create(
                slug=slug,
                defaults={
                    "name": slug,
                    "in_tree": slug == "kubenet",
                    "implements_network_policy": slug not in ("flannel", "kubenet"),
                },
            )
            plugins.append(plugin)
            vendor, _ = Vendor.objects.get_or_create(name=f"{slug} vendor")
            vendor.plugins.add(plugin)
            self.vendors[plugin.pk] = vendor
        for i in range(self.count):
            plugin = plugins[i % len(plugins)]
            self.clusters.append(
                Cluster(
                    name=f"bench-{plugin.slug}-{i:03d}",
                    plugin=plugin,
                    plugin_version=f"1.{i % 9}.0",
                    kubernetes_version=f"1.{31 + i % 5}.{i % 7}",
                    approved=i % 10 != 0,
                    proxier=PROXIERS[(i // len(PLUGINS)) % 3],
                    kubenet=plugin.slug == "kubenet",
                    load_balancer=i % 2 == 0,
                    owner=self.vendors[plugin.pk],
                    created=self.now - timedelta(days=400),
                )
            )
        self.clusters = Cluster.objects.bulk_create(self.clusters)
        for (
            cluster
        ) in self.clusters:  # through the product's own path: beat's PeriodicTask and health rows
            self.schedules[cluster.pk] = create_schedule(
                cluster, battery="all", interval_minutes=24 * 60, grace_minutes=120
            )

    def fingerprint(self, cluster: Any) -> dict[str, Any]:
        """A fingerprint of the battery's shape and size (kernel/battery/runner.py: nodes, boot
        IDs, the objects it created, the CNI detection, the demonstrated proxier), about 5 KB as
        a three-node cluster's is: an evaluation that read whole fingerprints would pay for them
        here as it would on real runs. One per cluster, shared by its runs."""
        found = self._fingerprints.get(cluster.pk)
        if found is not None:
            return found
        nodes = [f"{cluster.name}-node-{n}" for n in range(3)]

        def uid() -> str:
            return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

        objects = [
            {
                "kind": kind,
                "namespace": f"sctp-{ns}-{self.rng.randint(10000, 99999)}",
                "name": f"{kind.lower()}-{ns}-{pod}",
                "uid": uid(),
                "resourceVersion": str(self.rng.randint(10**5, 10**7)),
            }
            for kind in ("Pod", "Service")
            for ns in ("x", "y", "z", "basic")
            for pod in ("a", "b", "c")
        ]
        mode = cluster.proxier
        found = {
            "kubernetes_version": cluster.kubernetes_version,
            "emulated": False,
            "node_count": len(nodes),
            "node_names": nodes,
            "facts": {
                "nodes": {n: uid() for n in nodes},
                "resource_version": str(self.rng.randint(10**6, 10**8)),
                "objects": objects,
            },
            "battery_nodes": nodes,
            "shared_kernel": False,
            "cni": {
                "network": cluster.plugin.slug,
                "policy": cluster.plugin.slug,
                "service_dataplane": "kube-proxy",
                "kube_proxy_mode_configured": mode,
                "label": cluster.plugin.slug,
                "daemonsets": [f"kube-system/{cluster.plugin.slug}-node", "kube-system/kube-proxy"],
                "evidence": [f"DaemonSet kube-system/{cluster.plugin.slug}-node"],
            },
            "service_dataplane": "kube-proxy",
            "sctp_module_before": dict.fromkeys(nodes, False),
            "sctp_module_after": dict.fromkeys(nodes, True),
            "node_access": True,
            "kube_proxy_mode": mode,
            "proxier_demonstrated": {
                "mode": mode,
                "node": nodes[0],
                "detail": f"the Service's SCTP rules are in {mode}'s tables on {nodes[0]}",
            },
            "proxier_detected": mode,
            "proxier_source": "rules",
            "proxier_tables": [mode],
            "proxy_mode_answer": mode,
            "feature_gate": "SCTPSupport=true",
        }
        self._fingerprints[cluster.pk] = found
        return found

    def outcomes(self, cluster: Any, state: str) -> dict[str, str]:
        from dashboard.domain.catalog import ALL_KEYS

        result = {}
        for i, key in enumerate(ALL_KEYS):
            if state == "error" and i >= 3:
                result[key] = "not_run"
            elif key == "hostport-kubenet" and not cluster.kubenet:
                result[key] = "skipped"
            elif key == "pod-to-loadbalancer" and not cluster.load_balancer:
                result[key] = "skipped"
            elif key.startswith("netpol") and not cluster.plugin.implements_network_policy:
                result[key] = "skipped"
            else:
                roll = self.rng.random()
                result[key] = "passed" if roll < 0.94 else ("failed" if roll < 0.98 else "error")
        return result

    def runs(self, days: range) -> None:
        """One periodic `all` run per cluster and day, its eight results, flags from dashboard.domain.evidence."""
        from dashboard.domain.catalog import kubernetes_minor
        from dashboard.domain.evidence import summarize
        from dashboard.domain.models import Run, TestResult

        pending: list[tuple[Any, dict[str, str]]] = []

        def flush() -> None:
            made = Run.objects.bulk_create([run for run, _ in pending], batch_size=BATCH)
            results = [
                TestResult(
                    run_id=run.pk,
                    test_key=key,
                    outcome=outcome,
                    reason="" if outcome == "passed" else f"bench: {outcome}",
                    evidence="" if outcome == "skipped" else f"connect sctp {key}: {outcome}",
                    duration=1.5,
                    started=run.started,
                    finished=run.finished or run.created,
                )
                for run, (_, outcomes) in zip(made, pending, strict=True)
                for key, outcome in outcomes.items()
            ]
            TestResult.objects.bulk_create(results, batch_size=BATCH)
            self.rows["runs"] += len(made)
            self.rows["results"] += len(results)
            pending.clear()

        for day in days:
            for cluster in self.clusters:
                roll = self.rng.random()
                state = "finished" if roll < 0.97 else ("error" if roll < 0.99 else "cancelled")
                created = self.now - timedelta(days=day, minutes=self.rng.randint(1, 90))
                outcomes = self.outcomes(cluster, state)
                run = Run(
                    cluster=cluster,
                    plugin_id=cluster.plugin_id,
                    plugin_version=cluster.plugin_version,
                    kubernetes_version=cluster.kubernetes_version,
                    proxier=cluster.proxier,
                    battery="all",
                    trigger="periodic",
                    schedule=self.schedules[cluster.pk],
                    state=state,
                    created=created,
                    dispatched=created,
                    started=created + timedelta(seconds=2),
                    heartbeat=created + timedelta(seconds=90),
                    finished=created + timedelta(seconds=95),
                    worker="bench@worker",
                    error="worker lost: bench" if state == "error" else "",
                    fingerprint=self.fingerprint(cluster),
                    proxier_detected=cluster.proxier,
                    kubernetes_minor=kubernetes_minor(cluster.kubernetes_version),
                )
                run.apply_flags(summarize(outcomes, cluster.plugin.implements_network_policy))
                pending.append((run, outcomes))
            if len(pending) >= BATCH // 8 * 4:
                flush()
        if pending:
            flush()

    def submissions(self, count: int, max_age_days: int) -> None:
        from dashboard.domain.catalog import kubernetes_minor
        from dashboard.domain.evidence import summarize
        from dashboard.domain.models import Submission

        made = []
        for _ in range(count):
            self.submission_serial += 1
            cluster = self.rng.choice(self.clusters)
            outcomes = self.outcomes(cluster, "finished")
            status = self.rng.choices(
                ["verified", "pending_review", "rejected"], weights=[6, 3, 1]
            )[0]
            body = f"<testsuites><!-- bench submission {self.submission_serial} --></testsuites>".encode()
            sub = Submission(
                plugin_id=cluster.plugin_id,
                vendor=self.vendors[cluster.plugin_id],
                uploaded_by="bench",
                plugin_version=cluster.plugin_version,
                kubernetes_version=cluster.kubernetes_version,
                proxier=cluster.proxier,
                cluster_name=cluster.name,
                status=status,
                kind="junit",
                filename=f"junit_{self.submission_serial}.xml",
                sha256=hashlib.sha256(body).hexdigest(),
                size=len(body),
                content=body,
                results={k: {"outcome": o, "reason": ""} for k, o in outcomes.items()},
                counts={o: list(outcomes.values()).count(o) for o in set(outcomes.values())},
                detected_kubernetes_version=cluster.kubernetes_version,
                kubernetes_minor=kubernetes_minor(cluster.kubernetes_version),
                created=self.now
                - timedelta(
                    days=self.rng.randint(0, max_age_days), minutes=self.rng.randint(0, 1439)
                ),
            )
            sub.run_at, sub.run_at_source = sub.created - timedelta(hours=2), "file"
            sub.apply_flags(summarize(outcomes, cluster.plugin.implements_network_policy))
            made.append(sub)
        Submission.objects.bulk_create(made, batch_size=1000)
        self.rows["submissions"] += len(made)


def snapshot(source: str, name: str) -> str:
    """A copy of the database `source` as it is now (CREATE DATABASE ... TEMPLATE), so that a
    point of the history can be measured later, beside the others."""
    from django.db import connections

    connections.close_all()  # a template database must have no other session
    recreate_database(name, template=source)
    return name


def use_database(name: str) -> None:
    """This process's requests go to the database `name` from now on."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name
    connection.ensure_connection()


def measure_interleaved(
    paths: list[str], databases: list[str], rounds: int = ROUNDS
) -> list[dict[str, dict[str, Any]]]:
    """measure() of each database (a point of the history), their timed requests interleaved:
    round after round, each database in turn (a warm-up request on its new connection, then one
    timed request per page). A shared 2-core machine drifts by tens of per cent within minutes;
    measured one point after the other, the drift went into the ratios between points."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from dashboard.process import settle

    settle()  # as a served process does once its application is loaded (dashboard/wsgi.py)
    client = Client()
    found: list[dict[str, dict[str, Any]]] = []
    for name in databases:
        use_database(name)
        measured: dict[str, dict[str, Any]] = {}
        for path in paths:
            first = client.get(path)
            if first.status_code == 404:
                measured[path] = {"missing": True}
                continue
            assert first.status_code == 200, (path, first.status_code)
            client.get(path)
            # Counted apart from the timed requests: capturing makes the debug cursor write out
            # every statement with its parameters (the publication's 280 KB document among
            # them), which added 25-40 ms to a request here, a cost no server has.
            counts = set()
            for _ in range(CAPTURED_ROUNDS):
                with CaptureQueriesContext(connection) as queries:
                    assert client.get(path).status_code == 200
                counts.add(len(queries))
            measured[path] = {
                "times": [],
                "queries": sorted(counts),
                "captured": list(queries.captured_queries),
            }
        found.append(measured)
    for _ in range(rounds):
        for name, measured in zip(databases, found, strict=True):
            use_database(name)
            present = [p for p in paths if not measured[p].get("missing")]
            if present:
                assert client.get(present[0]).status_code == 200  # warm the new connection
            for path in present:
                started = time.perf_counter()
                resp = client.get(path)
                measured[path]["times"].append(time.perf_counter() - started)
                assert resp.status_code == 200
    for measured in found:
        for m in measured.values():
            if not m.get("missing"):
                m["median"] = median(m.pop("times"))
    return found


def explain_slowest(captured: list[dict[str, str]], top: int = 3) -> list[str]:
    from django.db import connection

    lines = []
    ranked = sorted(captured, key=lambda q: float(q["time"]), reverse=True)[:top]
    with connection.cursor() as cursor:
        for q in ranked:
            if not q["sql"].lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
            plan = [row[0] for row in cursor.fetchall()]
            lines.append(f"-- {float(q['time']) * 1000:.1f} ms: {q['sql'][:400]}")
            lines.extend("   " + p for p in plan[:25])
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--submissions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="requests per page and point")
    parser.add_argument(
        "--database",
        default=DB_NAME,
        help="dropped and created anew (bench_load.py reads sctp_bench)",
    )
    args = parser.parse_args(argv)

    setup_started = time.perf_counter()
    url = recreate_database(args.database)
    setup_django(url)
    migrate()
    setup_seconds = time.perf_counter() - setup_started
    from django.db import connection

    from dashboard.domain import heads

    gen = Generator(args.clusters)
    # Measured after 1 day, after a week (every criterion's working set complete: the periodic
    # criterion reads the last 3 runs of each schedule) and after the full history.
    points = [1, min(7, args.days), args.days]
    rows_at, seconds_at = [], []
    # Each earlier point is kept as a copy of the database then; all are measured at the end,
    # beside each other (measure_interleaved).
    databases: list[str] = []
    started = time.perf_counter()
    gen.fleet()
    done = 0
    for index, point in enumerate(points):
        step = time.perf_counter()
        gen.runs(range(done, point))
        share = args.submissions * point // args.days
        gen.submissions(max(1, share - gen.rows["submissions"]), max(0, point - 1))
        done = point
        # Bulk inserts send no signal: the evidence heads are rebuilt from the history, as every
        # readiness recording does (dashboard/domain/heads.py).
        heads.rebuild()
        # VACUUM as well as ANALYZE: otherwise autovacuum gets to the bulk inserts' tables later,
        # in the middle of the measurements or of the load benchmark after them; a served
        # database would have had it done.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")
        seconds_at.append(time.perf_counter() - (started if point == 1 else step))
        rows_at.append(dict(gen.rows))
        if index == len(points) - 1:
            databases.append(args.database)
        else:
            databases.append(snapshot(args.database, f"{args.database}_{point}d"))
    try:
        measured = measure_interleaved(PAGES, databases, args.rounds)
    finally:
        use_database(args.database)  # the EXPLAINs below read the full history
        for name in set(databases) - {args.database}:
            drop_database(name)

    print(
        table(
            "history: generator (PostgreSQL database sctp_bench, bulk inserts)",
            ["history", "clusters", "runs", "test results", "submissions", "seconds to add"],
            [["(migrate)", "", "", "", "", f"{setup_seconds:.1f}"]]
            + [
                [
                    f"{p} days",
                    args.clusters,
                    r["runs"],
                    r["results"],
                    r["submissions"],
                    f"{sec:.1f}",
                ]
                for p, r, sec in zip(points, rows_at, seconds_at, strict=True)
            ],
        )
    )
    rows, over = [], []
    for path in PAGES:
        small, week, full = (m[path] for m in measured)
        if any(m.get("missing") for m in (small, week, full)):
            rows.append([path, "not present (404)"] + [""] * 6)
            continue
        ratio_week = full["median"] / week["median"]
        ratio_day = full["median"] / small["median"]
        counts = small["queries"] + week["queries"] + full["queries"]
        same = len(set(counts)) == 1
        misses = [
            f"{full['median'] * 1000:.0f} ms > {TARGET_MS:.0f}"
            if full["median"] * 1000 > TARGET_MS
            else "",
            f"{ratio_week:.2f} x the week's" if ratio_week > TARGET_RATIO else "",
            "" if same else "query count changes",
            f"{max(counts)} queries" if max(counts) > MAX_QUERIES else "",
        ]
        verdict = "; ".join(m for m in misses if m) or "ok"
        if verdict != "ok":
            # In smoke mode only a count that grows with history fails (see timings_advisory).
            if not timings_advisory() or not same:
                over.append(path)
                verdict = "MISSED: " + verdict
            else:
                verdict = "MISSED (advisory): " + verdict
        rows.append(
            [path]
            + [f"{m['median'] * 1000:.1f}" for m in (small, week, full)]
            + [
                f"{ratio_day:.2f}",
                f"{ratio_week:.2f}",
                " / ".join(",".join(map(str, m["queries"])) for m in (small, week, full)),
                verdict,
            ]
        )
    print(
        table(
            f"history: median of {args.rounds} cold requests (ms) as history grows; target: {args.days} days "
            f"<= {TARGET_MS:.0f} ms and <= {TARGET_RATIO} x a week, <= {MAX_QUERIES} queries, the "
            "same count after 1 day, a week and the full history",
            [
                "page",
                "1 day",
                f"{points[1]} days",
                f"{args.days} days",
                f"{args.days}d / 1d",
                f"{args.days}d / {points[1]}d",
                "queries",
                "verdict",
            ],
            rows,
        )
    )
    full = measured[-1]
    for path in over:
        print(f"\n-- {path}: slowest queries on the full database, EXPLAIN ANALYZE")
        print("\n".join(explain_slowest(full[path]["captured"])))
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
