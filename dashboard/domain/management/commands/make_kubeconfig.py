"""`make_kubeconfig --context CTX`: least-privilege battery access to a cluster, for registration.

Runs with the caller's own kubectl access (their kubeconfig and context; exec plugins are fine
here, on their machine), applies deploy/rbac, issues a time-bound ServiceAccount token and
writes a kubeconfig with it inline. `--renew FILE` re-issues the token of such a kubeconfig
with the token itself (no cluster-admin needed) and rewrites the file; `--cluster NAME` also
stores the new kubeconfig on that registered cluster (what the beat task does by itself).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kubernetes import config as k8s_config

from dashboard.domain.models import AuditEvent, Cluster
from kernel import serviceaccount as sa


class Command(BaseCommand):
    help = "Apply the battery's RBAC and write an inline-token kubeconfig for registration."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--context", help="your kubeconfig context for the cluster")
        parser.add_argument(
            "--kubeconfig", help="your kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
        )
        parser.add_argument(
            "--namespace",
            default=sa.DEFAULT_NAMESPACE,
            help="namespace of the battery's ServiceAccount (default sctp-battery)",
        )
        parser.add_argument(
            "--duration",
            help="token lifetime: 90m, 24h, 7d (default 7d; with --renew, "
            "the current token's lifetime)",
        )
        parser.add_argument(
            "--output", "-o", help="where to write the kubeconfig (default: stdout)"
        )
        parser.add_argument(
            "--name", help="cluster name inside the kubeconfig (default: the context)"
        )
        parser.add_argument(
            "--node-access",
            action="store_true",
            help="also bind deploy/rbac/node-access (OpenShift SCC, PodSecurityPolicy)",
        )
        parser.add_argument(
            "--renew",
            metavar="FILE",
            help="re-issue the token of a kubeconfig made by this command, in place",
        )
        parser.add_argument(
            "--cluster", help="with --renew: store the result on this registered cluster"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            seconds = sa.parse_duration(opts["duration"]) if opts["duration"] else None
            if opts["renew"]:
                self._renew(opts, seconds)
            else:
                self._make(opts, seconds)
        except sa.AccessError as exc:
            raise CommandError(str(exc)) from exc

    def _make(self, opts: dict[str, Any], seconds: int | None) -> None:
        if not opts["context"]:
            raise CommandError("--context is required (see: kubectl config get-contexts)")
        try:
            api = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=opts["kubeconfig"] or None,
                context=opts["context"],
                persist_config=False,
            )
        except Exception as exc:  # ConfigException, missing file, unknown context
            raise CommandError(f"cannot use context {opts['context']!r}: {exc}") from exc
        try:
            for line in sa.apply_rbac(api, sa.rbac_objects(opts["namespace"], opts["node_access"])):
                self.stderr.write(line)
            token, expires = sa.request_token(
                api, opts["namespace"], sa.SERVICE_ACCOUNT, seconds or sa.DEFAULT_DURATION
            )
            target = sa.target_of(api)
        finally:
            api.close()
        text = sa.kubeconfig_text(
            target, token, opts["name"] or opts["context"], opts["namespace"], expires
        )
        self._write(opts["output"], text)
        self.stderr.write(f"token valid until {expires:%Y-%m-%dT%H:%M:%SZ}")

    def _renew(self, opts: dict[str, Any], seconds: int | None) -> None:
        path = Path(opts["renew"])
        try:
            current = path.read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        text, expires = sa.renewed_kubeconfig(current, seconds)
        self._write(opts["output"] or str(path), text)
        if opts["cluster"]:
            cluster = Cluster.objects.filter(name=opts["cluster"]).first()
            if cluster is None:
                raise CommandError(f"no registered cluster named {opts['cluster']!r}")
            cluster.kubeconfig = text  # encrypted on save
            cluster.save(update_fields=["kubeconfig"])
            AuditEvent.record(
                "make_kubeconfig",
                "cluster.token_renewed",
                f"cluster {opts['cluster']}",
                expires=f"{expires:%Y-%m-%dT%H:%M:%SZ}",
            )
        self.stderr.write(f"token renewed, valid until {expires:%Y-%m-%dT%H:%M:%SZ}")

    def _write(self, output: str | None, text: str) -> None:
        if not output or output == "-":
            sys.stdout.write(text)
            return
        # A credential: readable by its owner only, replaced in one step.
        tmp = f"{output}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, output)
        self.stderr.write(f"wrote {output}")
