"""Runs posted by the in-cluster agent (`python -m workers.agent`): checked, then stored as a Run.

The agent runs the battery inside the vendor's cluster with its own ServiceAccount, so the
dashboard never holds a credential for that cluster. What it posts is therefore a claim, and
is treated as one: the cluster is the vendor's (registered on first contact, unapproved, so
the evidence policy counts none of its runs until a maintainer approves it), `emulated` comes
from the fingerprint (the lab's /version mark), and the payload is validated strictly. A
refused payload stores nothing.

The view (`dashboard/api/views.py: agent_runs`) only authenticates and calls `accept()`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.dateparse import parse_datetime
from django.utils.timezone import now

from .catalog import Battery, Outcome, Proxier, keys_of, kubernetes_minor
from .models import AuditEvent, Cluster, Plugin, Run, Vendor

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
VERSION_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$")
TOP_KEYS = {
    "cluster",
    "plugin",
    "plugin_version",
    "kubernetes_version",
    "proxier",
    "battery",
    "started",
    "finished",
    "fingerprint",
    "results",
    "errors",
    "agent_version",
}
REQUIRED = {
    "cluster",
    "plugin",
    "proxier",
    "battery",
    "started",
    "finished",
    "fingerprint",
    "results",
}
RESULT_KEYS = {"outcome", "reason", "evidence", "duration", "started", "finished", "reached"}
MAX_REASON = 2000
MAX_EVIDENCE = 100_000
MAX_FINGERPRINT_BYTES = 64 * 1024
MAX_ERRORS = 50
CLOCK_SKEW = timedelta(minutes=10)
MAX_RUN_AGE = timedelta(days=2)  # an agent posts right after its run; older is a replay


@dataclass
class AgentRunError(Exception):
    status: int
    message: str


@dataclass(frozen=True)
class AgentResult:
    """One test's result as the agent posted it, checked: what `finish` records for the test."""

    outcome: str
    reason: str
    evidence: str
    duration: float | None
    reached: bool
    started: datetime | None
    finished: datetime | None


@dataclass(frozen=True)
class AgentReport:
    """An agent's run in the shape of a worker's battery report, for the same bookkeeping
    (`workers.runner.finish`): the results by catalog key and the cluster's fingerprint."""

    results: dict[str, AgentResult]
    fingerprint: dict[str, Any]


def max_bytes() -> int:
    return int(getattr(settings, "AGENT_RUN_MAX_BYTES", 2 * 1024 * 1024))


# The basic battery's TCP/UDP conformance checks, reported beside the catalog; the same as
# workers.battery.registry.EXTRAS_OF (a test keeps them equal), written out so the web process
# never imports the battery.
EXTRAS_OF: dict[str, tuple[str, ...]] = {
    "basic": ("conformance-tcp-pod-to-service", "conformance-udp-pod-to-service"),
    "connectivity": (),
    "all": ("conformance-tcp-pod-to-service", "conformance-udp-pod-to-service"),
}


def _extras(battery: str) -> tuple[str, ...]:
    return EXTRAS_OF.get(battery, ())


def _text(value: Any, field: str, limit: int, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise AgentRunError(400, f"{field} must be a string")
    if required and not value.strip():
        raise AgentRunError(400, f"{field} must not be empty")
    if len(value) > limit:
        raise AgentRunError(400, f"{field} is longer than {limit} characters")
    return value


def _when(value: Any, field: str, *, optional: bool = False) -> datetime | None:
    if value is None and optional:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or parsed.tzinfo is None:
        raise AgentRunError(400, f"{field} must be an ISO 8601 time with a time zone")
    return parsed


def parse(body: bytes) -> dict[str, Any]:
    """The checked payload; AgentRunError (400/413) names the first problem."""
    if len(body) > max_bytes():
        raise AgentRunError(413, f"the run is larger than {max_bytes()} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise AgentRunError(400, "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise AgentRunError(400, "the body must be a JSON object")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise AgentRunError(
            400, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(TOP_KEYS))})"
        )
    missing = sorted(REQUIRED - set(data))
    if missing:
        raise AgentRunError(400, f"missing field {missing[0]!r}")
    out: dict[str, Any] = {}
    cluster = data["cluster"]
    if not isinstance(cluster, str) or not NAME_RE.match(cluster):
        raise AgentRunError(
            400, "cluster must be a DNS label: lowercase letters, digits and '-', at most 63"
        )
    out["cluster"] = cluster
    out["plugin"] = _text(data["plugin"], "plugin", 60, required=True)
    if data["proxier"] not in Proxier.values:
        raise AgentRunError(400, f"proxier must be one of {', '.join(Proxier.values)}")
    out["proxier"] = data["proxier"]
    if data["battery"] not in Battery.values:
        raise AgentRunError(400, f"battery must be one of {', '.join(Battery.values)}")
    battery = out["battery"] = data["battery"]
    out["plugin_version"] = _text(data.get("plugin_version"), "plugin_version", 40)
    version = _text(data.get("kubernetes_version"), "kubernetes_version", 40)
    if version and not VERSION_RE.match(version):
        raise AgentRunError(400, f"kubernetes_version {version!r} is not a version like 1.31.2")
    out["kubernetes_version"] = version.lstrip("v")
    out["agent_version"] = _text(data.get("agent_version"), "agent_version", 100)
    started, finished = _when(data["started"], "started"), _when(data["finished"], "finished")
    assert started is not None and finished is not None
    current = now()
    if finished < started:
        raise AgentRunError(400, "finished is before started")
    if finished > current + CLOCK_SKEW:
        raise AgentRunError(400, "finished is in the future (check the cluster's clock)")
    if finished < current - MAX_RUN_AGE:
        raise AgentRunError(400, "the run finished more than 2 days ago: post runs as they end")
    out["started"], out["finished"] = started, finished
    out["fingerprint"] = _fingerprint(data["fingerprint"])
    out["results"] = _results(data["results"], battery)
    errors = data.get("errors") or []
    if not isinstance(errors, list) or len(errors) > MAX_ERRORS:
        raise AgentRunError(400, f"errors must be a list of at most {MAX_ERRORS} strings")
    out["errors"] = [_text(e, "errors[]", MAX_REASON) for e in errors]
    return out


def _fingerprint(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AgentRunError(400, "fingerprint must be an object")
    if len(json.dumps(value)) > MAX_FINGERPRINT_BYTES:
        raise AgentRunError(400, f"fingerprint is larger than {MAX_FINGERPRINT_BYTES} bytes")
    if not isinstance(value.get("emulated", False), bool):
        raise AgentRunError(400, "fingerprint.emulated must be true or false")
    detected = value.get("proxier_detected")
    if detected is not None and detected not in Proxier.values:
        raise AgentRunError(
            400, f"fingerprint.proxier_detected must be one of {', '.join(Proxier.values)} or null"
        )
    cni = value.get("cni_detected")
    if cni is not None and (not isinstance(cni, str) or len(cni) > 100):
        raise AgentRunError(400, "fingerprint.cni_detected must be a short string or null")
    return value


def _results(value: Any, battery: str) -> dict[str, AgentResult]:
    if not isinstance(value, dict):
        raise AgentRunError(400, "results must be an object keyed by catalog test")
    catalog, extras = keys_of(battery), _extras(battery)
    unknown = sorted(set(value) - set(catalog) - set(extras))
    if unknown:
        raise AgentRunError(400, f"results: {unknown[0]!r} is not a test of the {battery} battery")
    missing = [k for k in catalog if k not in value]
    if missing:
        raise AgentRunError(
            400, f"results: {missing[0]!r} has no outcome (every test of the battery needs one)"
        )
    out: dict[str, AgentResult] = {}
    for key, result in value.items():
        where = f"results.{key}"
        if not isinstance(result, dict):
            raise AgentRunError(400, f"{where} must be an object")
        unknown_fields = sorted(set(result) - RESULT_KEYS)
        if unknown_fields:
            raise AgentRunError(400, f"{where}: unknown field {unknown_fields[0]!r}")
        outcome = result.get("outcome")
        if outcome not in Outcome.values:
            raise AgentRunError(400, f"{where}.outcome must be one of {', '.join(Outcome.values)}")
        reason = _text(result.get("reason"), f"{where}.reason", MAX_REASON, required=True)
        duration = result.get("duration")
        if duration is not None and (
            isinstance(duration, bool)
            or not isinstance(duration, (int, float))
            or not 0 <= duration <= 86400
        ):
            raise AgentRunError(400, f"{where}.duration must be seconds between 0 and 86400")
        reached = result.get("reached", True)
        if not isinstance(reached, bool):
            raise AgentRunError(400, f"{where}.reached must be true or false")
        out[key] = AgentResult(
            outcome=outcome,
            reason=reason,
            evidence=_text(result.get("evidence"), f"{where}.evidence", MAX_EVIDENCE),
            duration=duration,
            reached=reached and outcome != Outcome.NOT_RUN,
            started=_when(result.get("started"), f"{where}.started", optional=True),
            finished=_when(result.get("finished"), f"{where}.finished", optional=True),
        )
    return out


def accept(body: bytes, vendor: Vendor, actor: str) -> Run:
    """Check the payload and the vendor's right to it, then store the run; AgentRunError else."""
    data = parse(body)
    plugin = Plugin.objects.filter(slug=data["plugin"]).first()
    if plugin is None:
        raise AgentRunError(400, f"unknown plugin {data['plugin']!r}")
    if not vendor.plugins.filter(pk=plugin.pk).exists():
        raise AgentRunError(403, f"you may not post runs for plugin {plugin.slug!r}")
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(name=data["cluster"]).first()
        if cluster is None:
            cluster = Cluster.objects.create(
                name=data["cluster"],
                owner=vendor,
                plugin=plugin,
                plugin_version=data["plugin_version"],
                kubernetes_version=data["kubernetes_version"],
                proxier=data["proxier"],
                node_access=bool(data["fingerprint"].get("node_access")),
                # no kubeconfig: the dashboard never reaches an agent's cluster itself
                kubeconfig="",
                approved=False,
                emulated=data["fingerprint"].get("emulated") is True,
            )
            AuditEvent.record(
                actor,
                "cluster.register",
                f"cluster {cluster.name}",
                via="agent",
                plugin=plugin.slug,
            )
        elif cluster.owner_id != vendor.pk:
            raise AgentRunError(403, f"cluster {cluster.name} is registered by someone else")
        elif cluster.plugin_id != plugin.pk:
            raise AgentRunError(
                409,
                f"cluster {cluster.name} is registered for plugin {cluster.plugin.slug}, "
                f"not {plugin.slug}",
            )
        elif not cluster.enabled:
            raise AgentRunError(
                409, f"cluster {cluster.name} is disabled; a maintainer may enable it"
            )
        else:
            from .trust import refuse_run

            refusal = refuse_run(cluster, data["battery"])  # basic-only clusters
            if refusal:
                raise AgentRunError(409, refusal)
        run = _store(cluster, plugin, data)
        AuditEvent.record(
            actor, "run.agent", f"run {run.pk}", cluster=cluster.name, battery=run.battery
        )
    from workers.runner import after_run

    transaction.on_commit(lambda: after_run(run.pk))
    return run


def _store(cluster: Cluster, plugin: Plugin, data: dict[str, Any]) -> Run:
    from workers.runner import finish

    fingerprint = data["fingerprint"]
    run = Run.objects.create(
        cluster=cluster,
        plugin=plugin,
        plugin_version=data["plugin_version"] or cluster.plugin_version,
        kubernetes_version=data["kubernetes_version"] or cluster.kubernetes_version,
        kubernetes_minor=kubernetes_minor(data["kubernetes_version"] or cluster.kubernetes_version),
        proxier=data["proxier"],
        battery=data["battery"],
        trigger=Run.Trigger.AGENT,
        state=Run.State.RUNNING,
        started=data["started"],
        heartbeat=data["started"],
        worker=f"agent {data['agent_version']}".strip()[:200],
    )
    unreached = [r for r in data["results"].values() if not r.reached]
    state = Run.State.ERROR if unreached else Run.State.FINISHED
    error = unreached[0].reason.removeprefix("not run: ") if unreached else ""
    report = AgentReport(results=data["results"], fingerprint=fingerprint)
    # The same bookkeeping as a worker's run: flags, detected proxier, emulated (from the
    # fingerprint, marking the cluster too), release; then the time the agent's run ended.
    finish(run, state, error, report)
    Run.objects.filter(pk=run.pk).update(finished=data["finished"])
    run.refresh_from_db()
    return run
