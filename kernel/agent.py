"""The in-cluster agent: run the battery inside the vendor's cluster, post the run.

    python -m kernel.agent --dashboard https://sctp.example.org --cluster calico-prod \\
        --plugin calico --proxier iptables [--battery basic]

Runs as a Job or CronJob (deploy/agent/) with the in-cluster ServiceAccount (deploy/rbac/):
the dashboard never holds a credential that can start privileged pods on the vendor's nodes,
which is why Sonobuoy runs inside the cluster too. The vendor's dashboard token comes from a
Secret (SCTP_DASHBOARD_TOKEN, or a file named by SCTP_DASHBOARD_TOKEN_FILE), and so does the
agent's own per-cluster key (SCTP_AGENT_KEY or SCTP_AGENT_KEY_FILE: 32 or more random
characters, e.g. `openssl rand -hex 32`), its identity: the dashboard keeps only its SHA-256.
The run is posted to `POST /api/v1/agent-runs/`; the dashboard registers the cluster on first
contact, unapproved, with that key. Its runs are self-reported evidence: each counts once a
maintainer has approved the cluster (and so its key) and verified that run.

Every option can also come from the environment (SCTP_AGENT_<OPTION>, e.g.
SCTP_AGENT_CLUSTER), so a ConfigMap can configure the CronJob. Exit status: 0 posted,
1 the dashboard refused the run (its answer is printed), 2 bad configuration, 3 the
dashboard could not be reached.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

from kernel.battery import ClusterSpec, Timeouts, run_battery, sweep_namespaces
from kernel.battery.base import DEFAULT_AGNHOST_IMAGE
from kernel.vocabulary import PROXIERS

log = logging.getLogger("kernel.agent")

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POST_TRIES = 4
POST_TIMEOUT = 30.0
MAX_REASON, MAX_EVIDENCE = 2000, 100_000  # what POST agent-runs/ accepts per field
VERSION = "1"


class AgentError(Exception):
    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"SCTP_AGENT_{name.upper().replace('-', '_')}")
    return value if value not in (None, "") else default


def _bool(text: str | None, default: bool) -> bool:
    if text is None:
        return default
    return text.strip().lower() in ("1", "true", "yes", "on")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kernel.agent", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--dashboard",
        default=os.environ.get("SCTP_DASHBOARD_URL"),
        help="the dashboard's address (env SCTP_DASHBOARD_URL)",
    )
    p.add_argument("--cluster", default=_env("cluster"), help="the cluster's name on the dashboard")
    p.add_argument(
        "--plugin", default=_env("plugin"), help="the network plugin's slug, e.g. calico"
    )
    p.add_argument("--plugin-version", default=_env("plugin_version", ""))
    p.add_argument(
        "--proxier", default=_env("proxier", "iptables"), help="iptables | ipvs | nftables"
    )
    p.add_argument("--battery", default=_env("battery", "basic"), help="basic | connectivity | all")
    p.add_argument(
        "--node-access",
        default=_env("node_access"),
        help="true/false: privileged hostexec pods allowed (default true)",
    )
    p.add_argument(
        "--load-balancer", default=_env("load_balancer"), help="true/false (default false)"
    )
    p.add_argument("--kubenet", default=_env("kubenet"), help="true/false (default false)")
    p.add_argument("--agnhost-image", default=_env("agnhost_image"))
    p.add_argument(
        "--timeouts",
        default=_env("timeouts"),
        help='JSON overrides of the battery\'s waits, e.g. {"pod_start": 600}',
    )
    p.add_argument(
        "--service-account-dir",
        default=_env("service_account_dir", SA_DIR),
        help=f"token and ca.crt of the in-cluster ServiceAccount (default {SA_DIR})",
    )
    p.add_argument(
        "--token-file",
        default=os.environ.get("SCTP_DASHBOARD_TOKEN_FILE"),
        help="file holding the vendor's dashboard token (else env SCTP_DASHBOARD_TOKEN)",
    )
    p.add_argument(
        "--key-file",
        default=os.environ.get("SCTP_AGENT_KEY_FILE"),
        help="file holding this cluster's agent key (else env SCTP_AGENT_KEY)",
    )
    p.add_argument(
        "--dashboard-ca",
        default=_env("dashboard_ca"),
        help="a CA bundle for the dashboard's certificate (default: the system's)",
    )
    return p


def vendor_token(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    if args.token_file:
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as exc:
            raise AgentError(
                f"cannot read the dashboard token file {args.token_file}: {exc}"
            ) from exc
    else:
        token = (environ.get("SCTP_DASHBOARD_TOKEN") or "").strip()
    if not token:
        raise AgentError(
            "no dashboard token: set SCTP_DASHBOARD_TOKEN or SCTP_DASHBOARD_TOKEN_FILE "
            "(from the Secret holding your vendor token)"
        )
    return token


def agent_key(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    if getattr(args, "key_file", None):
        try:
            key = Path(args.key_file).read_text().strip()
        except OSError as exc:
            raise AgentError(f"cannot read the agent key file {args.key_file}: {exc}") from exc
    else:
        key = (environ.get("SCTP_AGENT_KEY") or "").strip()
    if not 32 <= len(key) <= 200:
        raise AgentError(
            "no agent key: set SCTP_AGENT_KEY or SCTP_AGENT_KEY_FILE to this cluster's key "
            "(32 to 200 characters, e.g. from `openssl rand -hex 32`, kept in a Secret)"
        )
    return key


def in_cluster_client(sa_dir: str, environ: Mapping[str, str]) -> Any:
    """An ApiClient from KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's token and CA."""

    directory = Path(sa_dir)
    configuration = type.__call__(k8s.Configuration)  # never the process-wide default
    loader = InClusterConfigLoader(
        token_filename=str(directory / "token"),
        cert_filename=str(directory / "ca.crt"),
        environ=dict(environ),
    )
    try:
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise AgentError(
            f"not inside a cluster, or the ServiceAccount is not mounted ({directory}): {exc}"
        ) from exc
    configuration.retries = False  # the battery's own retry policy decides (kernel/kube.py)
    return k8s.ApiClient(configuration)


def cluster_spec(args: argparse.Namespace) -> Any:

    for option in ("cluster", "plugin"):
        if not getattr(args, option):
            raise AgentError(f"--{option} is required (or SCTP_AGENT_{option.upper()})")
    if args.battery not in ("basic", "connectivity", "all"):
        raise AgentError("--battery must be basic, connectivity or all")
    if args.proxier not in PROXIERS:
        raise AgentError("--proxier must be iptables, ipvs or nftables")
    timeouts = Timeouts()
    if args.timeouts:
        try:
            overrides = json.loads(args.timeouts)
            known = {f.name for f in dataclasses.fields(Timeouts)}
            if not isinstance(overrides, dict) or set(overrides) - known:
                raise ValueError(f"keys must be among {', '.join(sorted(known))}")
            typed = {k: type(getattr(timeouts, k))(v) for k, v in overrides.items()}
            timeouts = dataclasses.replace(timeouts, **typed)
        except (ValueError, TypeError) as exc:
            raise AgentError(f"--timeouts: {exc}") from exc
    return ClusterSpec(
        name=args.cluster,
        plugin_slug=args.plugin,
        plugin_in_tree=args.plugin == "kubenet",
        kubenet=_bool(args.kubenet, args.plugin == "kubenet"),
        declared_proxier=args.proxier,
        node_access=_bool(args.node_access, True),
        load_balancer=_bool(args.load_balancer, False),
        agnhost_image=args.agnhost_image or DEFAULT_AGNHOST_IMAGE,
        timeouts=timeouts,
    )


def _version_says_emulated(api: Any) -> bool:
    """GET /version carries `"emulated": true` on the lab; unreadable counts as emulated."""

    try:
        answer: Any = k8s.VersionApi(api).get_code(
            _preload_content=False, _request_timeout=10
        )  # urllib3's
        return json.loads(answer.data or b"{}").get("emulated") is True
    except Exception:  # when in doubt, the evidence does not count
        return True


def payload(
    args: argparse.Namespace, report: Any, started: datetime, finished: datetime
) -> dict[str, Any]:
    results = {}
    for key, outcome in report.results.items():
        data = outcome.to_dict()
        results[key] = {
            k: data[k]
            for k in ("outcome", "reason", "evidence", "duration", "started", "finished", "reached")
        }
        # Within the dashboard's limits (dashboard/domain/agent_runs.py), so a long log never costs the run.
        results[key]["reason"] = data["reason"][:MAX_REASON]
        results[key]["evidence"] = data["evidence"][:MAX_EVIDENCE]
    fingerprint = dict(report.fingerprint)
    return {
        "cluster": args.cluster,
        "plugin": args.plugin,
        "plugin_version": args.plugin_version or "",
        "kubernetes_version": fingerprint.get("kubernetes_version") or "",
        "proxier": args.proxier,
        "battery": args.battery,
        "started": started.isoformat(),
        "finished": finished.isoformat(),
        "fingerprint": fingerprint,
        "results": results,
        "errors": [str(e)[:MAX_REASON] for e in report.errors][:50],
        "agent_version": VERSION,
    }


def post(
    url: str,
    token: str,
    body: dict[str, Any],
    ca: str | None = None,
    tries: int = POST_TRIES,
    backoff: float = 2.0,
    key: str = "",
) -> dict[str, Any]:
    """POST the run; retried on connection errors and 5xx (bounded), never on 4xx."""
    data = json.dumps(body).encode()
    context = ssl.create_default_context(cafile=ca) if ca else None
    target = url.rstrip("/") + "/api/v1/agent-runs/"
    last = ""
    for attempt in range(tries):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        request = urllib.request.Request(
            target,
            data=data,
            method="POST",
            headers={
                "Authorization": f"Token {token}",
                "X-Agent-Key": key,
                "Content-Type": "application/json",
                "User-Agent": f"sctp-dashboard-agent/{VERSION}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=POST_TIMEOUT, context=context) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as err:
            text = err.read()[:2000].decode("utf-8", "replace")
            if err.code < 500:
                raise AgentError(
                    f"the dashboard refused the run: HTTP {err.code}: {text}", code=1
                ) from err
            last = f"HTTP {err.code}: {text}"
        except (urllib.error.URLError, OSError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        log.warning("posting the run failed (try %d/%d): %s", attempt + 1, tries, last)
    raise AgentError(
        f"the dashboard at {url} could not be reached after {tries} tries: {last}", code=3
    )


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    environ = os.environ if environ is None else environ
    args = parser().parse_args(argv)
    try:
        if not args.dashboard:
            raise AgentError("--dashboard is required (or SCTP_DASHBOARD_URL)")
        spec = cluster_spec(args)
        token = vendor_token(args, environ)
        key = agent_key(args, environ)
        api = in_cluster_client(args.service_account_dir, environ)
        try:
            try:  # namespaces a killed earlier agent left behind (the CronJob never overlaps)
                swept = sweep_namespaces(api, set(), request_timeout=spec.timeouts.request)
                if swept:
                    log.info("removed %d namespaces of earlier runs", len(swept))
            except Exception as exc:  # the run itself says what is wrong
                log.warning("sweeping earlier namespaces failed: %s", exc)
            started = datetime.now(UTC)
            run_id = f"agent-{started:%Y%m%d%H%M%S}"
            log.info("running the %s battery on %s", args.battery, args.cluster)
            report = run_battery(api, spec, args.battery, run_id)
            finished = datetime.now(UTC)
            if "emulated" not in report.fingerprint:  # a battery that predates the mark
                report.fingerprint["emulated"] = _version_says_emulated(api)
        finally:
            api.close()
        answer = post(
            args.dashboard,
            token,
            payload(args, report, started, finished),
            args.dashboard_ca,
            key=key,
        )
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    summary = {
        "run": answer.get("run"),
        "url": answer.get("url"),
        "results": {k: r.outcome for k, r in report.results.items()},
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
