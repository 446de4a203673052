"""Runs a battery on a cluster: in this process with --sync, else through the workers."""

from __future__ import annotations

import json
import socket
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from dashboard.domain import heads
from dashboard.domain.catalog import Battery, Outcome
from dashboard.domain.models import Cluster, Run
from dashboard.domain.runs import RunRequestError, missing_reason, request_run, results_of
from workers import runner


class Command(BaseCommand):
    help = "Run the SCTP battery against a registered cluster."

    def add_arguments(self, parser):
        parser.add_argument("cluster")
        parser.add_argument("--battery", choices=Battery.values, default=Battery.ALL)
        parser.add_argument("--sync", action="store_true", help="run here, not on a worker")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--wait-lease",
            type=int,
            default=600,
            help="seconds to wait while another run holds the cluster (--sync)",
        )

    def handle(self, *args, **opts):
        cluster = Cluster.objects.select_related("plugin").filter(name=opts["cluster"]).first()
        if cluster is None:
            known = ", ".join(Cluster.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no cluster named {opts['cluster']!r} (registered: {known})")
        try:
            run = request_run(
                cluster,
                opts["battery"],
                trigger=Run.Trigger.MANUAL,
                dispatch_on_commit=not opts["sync"],
            )
        except RunRequestError as exc:
            raise CommandError(exc.message) from exc
        if not opts["sync"]:
            self.stdout.write(
                json.dumps({"run": run.id, "status": run.state})
                if opts["json"]
                else f"run {run.id} queued"
            )
            return
        deadline = time.monotonic() + opts["wait_lease"]
        worker = f"run_battery@{socket.gethostname()}"
        while runner.execute(run.id, worker=worker) == runner.BUSY:
            if time.monotonic() > deadline:
                with transaction.atomic():
                    Run.objects.filter(pk=run.id, state=Run.State.QUEUED).update(
                        state=Run.State.ERROR, error="another run held the cluster for too long"
                    )
                    heads.refresh_runs([run.id])
                break
            time.sleep(1)
        run = Run.objects.select_related("cluster", "plugin").get(pk=run.id)
        catalog, extras = results_of(run, {res.test_key: res for res in run.results.all()})
        out = {
            "run": run.id,
            "status": run.state,
            "error": run.error or None,
            "results": {
                key: {"outcome": res.outcome, "reason": res.reason}
                if res is not None
                else {"outcome": Outcome.NOT_RUN, "reason": missing_reason(run)}
                for key, res in catalog.items()
            },
            "conformance": {
                key: {"outcome": res.outcome, "reason": res.reason} for key, res in extras.items()
            },
            "fingerprint": run.fingerprint,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(out))
        else:
            self.stdout.write(f"run {run.id} on {cluster.name}: {run.state}")
            for key, value in out["results"].items():
                self.stdout.write(f"  {key:28} {value['outcome']:8} {value['reason']}")
        if run.state != Run.State.FINISHED:
            raise SystemExit(1)
