"""Serves the lab's emulated clusters until stopped; --register makes them dashboard clusters."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.domain.lab_clusters import kickoff, register
from kernel.netguard import ServerNotAllowed, check_server
from lab.profiles import load_profiles
from lab.server import LabServer


class Command(BaseCommand):
    help = "Serve one emulated Kubernetes cluster per profile file in DIR."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--profiles", required=True, help="directory of lab profile YAML files")
        parser.add_argument("--port", type=int, default=8070)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--public-host", default="", help="host name other processes reach the lab at"
        )
        parser.add_argument(
            "--register", action="store_true", help="create or update a cluster per profile"
        )
        parser.add_argument(
            "--kickoff", action="store_true", help="request a first run on clusters without one"
        )
        parser.add_argument(
            "--kubeconfig",
            default="",
            help="write a kubeconfig here with one context per cluster (named after it)",
        )
        parser.add_argument(
            "--state-dir",
            default="",
            help="where the lab keeps its CA (default: var/lab; generated at the first start)",
        )
        parser.add_argument(
            "--insecure-http",
            action="store_true",
            help="serve plain HTTP instead of HTTPS (debugging; kubectl sends no token over it)",
        )
        parser.add_argument("--verbose", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            profiles = load_profiles(opts["profiles"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if not profiles:
            raise CommandError(f"no profiles (*.yaml) in {opts['profiles']}")

        state_dir = opts["state_dir"] or str(settings.VAR_DIR / "lab")
        try:
            server = LabServer(
                profiles,
                host=opts["host"],
                port=opts["port"],
                verbose=opts["verbose"],
                tls=not opts["insecure_http"],
                state_dir=state_dir,
                hosts=(opts["public_host"],) if opts["public_host"] else (),
            ).start()
        except OSError as exc:
            raise CommandError(f"cannot listen on {opts['host']}:{opts['port']}: {exc}") from exc
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        public = (
            f"{server.scheme}://{opts['public_host']}:{server.port}"
            if opts["public_host"]
            else None
        )
        if opts["kubeconfig"]:
            path = server.write_kubeconfig(opts["kubeconfig"], public)
            self.stdout.write(
                f"kubeconfig {path} (one context per cluster), e.g. "
                f"KUBECONFIG={opts['kubeconfig']} kubectl get pods -A --context {next(iter(server.clusters))}"
            )
        for name in server.clusters:
            self.stdout.write(f"lab cluster {name}: {public or server.base_url}/clusters/{name}")
        if opts["register"]:
            self.warn_unless_allowed(public or server.base_url)
            clusters = register(server, public)
            self.stdout.write(f"registered {len(clusters)} lab clusters")
            if opts["kickoff"]:
                runs = kickoff(clusters)
                self.stdout.write(f"requested {len(runs)} first runs")
        self.stdout.flush()
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *a: stop.set())
        signal.signal(signal.SIGTERM, lambda *a: stop.set())
        stop.wait()
        server.stop()

    def warn_unless_allowed(self, url: str) -> None:
        """Lab clusters live on the loopback or a private network: say so when workers will refuse them."""

        try:
            check_server(url)
        except ServerNotAllowed as exc:
            self.stderr.write(
                f"warning: runs on the lab clusters will be refused: {exc}; "
                "allow the lab's network explicitly, e.g. CLUSTER_ALLOWED_NETWORKS=127.0.0.0/8"
            )
