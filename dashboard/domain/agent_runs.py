"""Runs posted by the in-cluster agent (`python -m kernel.agent`): checked, then stored as a Run.

The agent runs the battery inside the vendor's cluster with its own ServiceAccount, so the
dashboard never holds a credential for that cluster. What it posts is therefore a claim, and
is treated as one, a trust class of its own ("self-reported", shown wherever the run is):

- A cluster either is tested by our workers (registered with a kubeconfig) or reports through
  its agent, fixed at registration; agent runs for a worker-tested cluster are refused, and
  only a maintainer changes the mode (dashboard.domain.trust.set_mode, audited).
- The agent's identity is a per-cluster key, sent as the `X-Agent-Key` header; the first
  contact registers the cluster, unapproved, with the key's SHA-256 (the key is never stored),
  and the maintainer's approval of the cluster approves that key. Another key is refused.
- The run carries the facts the battery records (node names and boot IDs, the cluster's
  resourceVersion when it began, the UID and resourceVersion of every object it created), and
  they are checked against the cluster's earlier runs: a boot ID never returns after another
  one and never moves to another node, resourceVersions only grow, runs do not overlap, tests
  fit inside their run. An inconsistent run is refused (422); a replayed payload, or one whose
  object UIDs an earlier run reported, is refused (409).
- None of this proves the outcomes: the dashboard cannot observe the cluster. So a
  self-reported run counts only once a maintainer verifies it (dashboard.domain.trust.verify_agent_run,
  audited), as a submission does; the evidence policy says so.

`emulated` comes from the fingerprint (the lab's /version mark), and the payload is validated
strictly. A refused payload stores nothing.

The view (`dashboard/web/api/views.py: agent_runs`) only authenticates and calls `accept()`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.dateparse import parse_datetime
from django.utils.timezone import now

from dashboard.domain import heads
from dashboard.domain.catalog import Battery, Outcome, Proxier, keys_of, kubernetes_minor
from dashboard.domain.models import AuditEvent, Cluster, Plugin, Run, Vendor
from dashboard.domain.runs import after_run, end_state, finish
from dashboard.domain.trust import refuse_run
from kernel import vocabulary as vocab

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
KEY_HEADER = "HTTP_X_AGENT_KEY"  # X-Agent-Key: the agent's per-cluster key
KEY_MIN, KEY_MAX = 32, 200
MAX_FACT_NODES, MAX_FACT_OBJECTS = 1000, 300
TIMING_SLACK = timedelta(minutes=1)
HISTORY = 200  # earlier runs of the cluster the facts are checked against


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_fingerprint(digest: str) -> str:
    """What pages show of an agent key, for a maintainer to compare with the vendor's word."""
    return f"sha256:{digest[:16]}" if digest else ""


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
    (`dashboard.domain.runs.finish`): the results by catalog key and the cluster's fingerprint."""

    results: dict[str, AgentResult]
    fingerprint: dict[str, Any]


def max_bytes() -> int:
    return int(getattr(settings, "AGENT_RUN_MAX_BYTES", 2 * 1024 * 1024))


EXTRAS_OF = vocab.EXTRAS_OF  # the conformance checks each battery reports beside the catalog


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
    # The agent runs our battery; upstream's e2e.test runs on the dashboard's workers only.
    agent_batteries = [b for b in Battery.values if b != Battery.UPSTREAM]
    if data["battery"] not in agent_batteries:
        raise AgentRunError(400, f"battery must be one of {', '.join(agent_batteries)}")
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
    value["facts"] = _facts(value.get("facts"))
    return value


def _facts(value: Any) -> dict[str, Any]:
    """fingerprint.facts, as the battery records it (kernel/battery/runner.py)."""
    if not isinstance(value, dict):
        raise AgentRunError(
            400,
            "fingerprint.facts is missing: the run must carry the facts the battery records "
            "(node boot IDs, resourceVersions, object UIDs); update the agent",
        )
    nodes = value.get("nodes")
    if (
        not isinstance(nodes, dict)
        or not nodes
        or len(nodes) > MAX_FACT_NODES
        or not all(
            isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= 253 and 0 < len(v) <= 100
            for k, v in nodes.items()
        )
    ):
        raise AgentRunError(400, "fingerprint.facts.nodes must map each node's name to its boot ID")
    rv = value.get("resource_version")
    if not isinstance(rv, str) or not rv or len(rv) > 40:
        raise AgentRunError(400, "fingerprint.facts.resource_version must be a resourceVersion")
    objects = value.get("objects", [])
    if not isinstance(objects, list) or len(objects) > MAX_FACT_OBJECTS:
        raise AgentRunError(
            400, f"fingerprint.facts.objects must be a list of at most {MAX_FACT_OBJECTS}"
        )
    clean = []
    for obj in objects:
        if not isinstance(obj, dict) or not all(
            isinstance(obj.get(k), str) and len(obj[k]) <= 253
            for k in ("kind", "name", "uid", "resource_version")
        ):
            raise AgentRunError(
                400,
                "fingerprint.facts.objects[] must be objects with kind, name, uid and "
                "resource_version",
            )
        clean.append({k: obj[k] for k in ("kind", "name", "uid", "resource_version")})
    uids = [o["uid"] for o in clean]
    if len(set(uids)) != len(uids):
        raise AgentRunError(422, "fingerprint.facts.objects: the same UID is given twice")
    return {"nodes": dict(nodes), "resource_version": rv, "objects": clean}


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
        if not isinstance(outcome, str) or outcome not in Outcome.values:
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


def accept(body: bytes, vendor: Vendor, actor: str, key: str = "") -> Run:
    """Check the payload, the vendor's right to it and the agent's key, then store the run;
    AgentRunError else (nothing stored)."""
    key = (key or "").strip()
    if not KEY_MIN <= len(key) <= KEY_MAX:
        raise AgentRunError(
            401,
            f"the agent's key is missing or not {KEY_MIN}-{KEY_MAX} characters: send the "
            "cluster's agent key as the X-Agent-Key header (SCTP_AGENT_KEY)",
        )
    digest = key_digest(key)
    data = parse(body)
    data["digest"] = payload_digest(data)
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
                mode=Cluster.Mode.AGENT,
                agent_key_digest=digest,
            )
            AuditEvent.record(
                actor,
                "cluster.register",
                f"cluster {cluster.name}",
                via="agent",
                plugin=plugin.slug,
                agent_key=key_fingerprint(digest),
            )
        elif cluster.owner_id != vendor.pk:
            raise AgentRunError(403, f"cluster {cluster.name} is registered by someone else")
        elif cluster.mode != Cluster.Mode.AGENT:
            raise AgentRunError(
                409,
                f"cluster {cluster.name} is tested by the dashboard's workers (registered with a "
                "kubeconfig): it takes no agent runs; only a maintainer may change its mode",
            )
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
            refusal = refuse_run(cluster, data["battery"])  # basic-only clusters
            if refusal:
                raise AgentRunError(409, refusal)
            if not cluster.agent_key_digest:  # a maintainer reset the key: this one registers
                Cluster.objects.filter(pk=cluster.pk).update(
                    agent_key_digest=digest, approved=False, approved_by=None, approved_at=None
                )
                cluster.refresh_from_db()
                AuditEvent.record(
                    actor,
                    "cluster.agent_key",
                    f"cluster {cluster.name}",
                    agent_key=key_fingerprint(digest),
                )
            elif cluster.agent_key_digest != digest:
                raise AgentRunError(
                    403,
                    f"this is not the agent key of cluster {cluster.name}: a maintainer may reset "
                    "the cluster's key if it was lost",
                )
        check_consistency(cluster, data)
        run = _store(cluster, plugin, data)
        AuditEvent.record(
            actor, "run.agent", f"run {run.pk}", cluster=cluster.name, battery=run.battery
        )
    transaction.on_commit(lambda: after_run(run.pk))
    return run


def _store(cluster: Cluster, plugin: Plugin, data: dict[str, Any]) -> Run:
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
        agent_digest=data["digest"],
        state=Run.State.RUNNING,
        started=data["started"],
        heartbeat=data["started"],
        worker=f"agent {data['agent_version']}".strip()[:200],
    )
    report = AgentReport(results=data["results"], fingerprint=fingerprint)
    state, error = end_state(report)
    # The same bookkeeping as a worker's run: flags, detected proxier, emulated (from the
    # fingerprint, marking the cluster too), release; then the time the agent's run ended.
    with transaction.atomic():
        finish(run, state, error, report)
        Run.objects.filter(pk=run.pk).update(finished=data["finished"])
        heads.refresh(clusters=[run.cluster_id], schedules=[run.schedule_id])
    run.refresh_from_db()
    return run


def payload_digest(data: dict[str, Any]) -> str:
    """The checked payload's digest, whatever its spacing or key order: a replay's is the same."""

    def plain(value: Any) -> Any:
        if isinstance(value, AgentResult):
            return plain(vars(value))
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, datetime):
            return value.isoformat()
        return value

    text = json.dumps(plain(data), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _rv(text: str) -> int | None:
    """A resourceVersion as a number (etcd's revision), None when it is not one."""
    return int(text) if text.isdigit() and len(text) <= 19 else None


def check_consistency(cluster: Cluster, data: dict[str, Any]) -> None:
    """The run's facts against themselves and the cluster's earlier agent runs: 409 for a
    replay, 422 for what cannot be true of one cluster; the message names the fact."""
    if Run.objects.filter(agent_digest=data["digest"]).exists():
        raise AgentRunError(409, "this run was already posted (an identical payload)")
    facts = data["fingerprint"]["facts"]
    started, finished = data["started"], data["finished"]
    # Timings: every test inside its run; the tests run one after another.
    window = finished - started
    total = 0.0
    for key, r in data["results"].items():
        for name, when in (("started", r.started), ("finished", r.finished)):
            if when is not None and not started - TIMING_SLACK <= when <= finished + TIMING_SLACK:
                raise AgentRunError(422, f"results.{key}.{name} lies outside the run's time")
        if r.duration is not None:
            if r.duration > window.total_seconds() + TIMING_SLACK.total_seconds():
                raise AgentRunError(422, f"results.{key}.duration is longer than the run")
            total += r.duration
    if total > window.total_seconds() + TIMING_SLACK.total_seconds():
        raise AgentRunError(
            422, "the tests' durations add up to more than the run lasted (they run one by one)"
        )
    names = data["fingerprint"].get("node_names")
    if isinstance(names, list) and set(names) != set(facts["nodes"]):
        raise AgentRunError(422, "fingerprint.node_names and facts.nodes name different nodes")
    start_rv = _rv(facts["resource_version"])
    object_rvs = [_rv(o["resource_version"]) for o in facts["objects"]]
    if start_rv is not None and any(rv is not None and rv < start_rv for rv in object_rvs):
        raise AgentRunError(
            422, "an object the run created has a resourceVersion older than the run's start"
        )
    earlier = list(
        Run.objects.filter(cluster=cluster, trigger=Run.Trigger.AGENT)
        .exclude(started=None)
        .order_by("-started")
        .values("id", "started", "finished", "fingerprint")[:HISTORY]
    )
    uids = {o["uid"] for o in facts["objects"]}
    boots = {boot: node for node, boot in facts["nodes"].items()}
    history: dict[str, list[tuple[datetime, str]]] = {}
    for other in earlier:
        their = (other["fingerprint"] or {}).get("facts") or {}
        seen = uids & {o.get("uid") for o in their.get("objects") or [] if isinstance(o, dict)}
        if seen:
            raise AgentRunError(
                409,
                f"replayed: run {other['id']} already reported object UID {sorted(seen)[0]}",
            )
        o_start = other["started"]
        o_end = other["finished"] or o_start
        assert o_start is not None  # excluded by the query
        if o_start < finished and started < o_end:
            raise AgentRunError(
                422,
                f"the run overlaps run {other['id']} of this cluster (one battery runs at a time)",
            )
        for node, boot in (their.get("nodes") or {}).items():
            history.setdefault(node, []).append((o_start, boot))
            if boot in boots and boots[boot] != node:
                raise AgentRunError(
                    422,
                    f"boot ID of node {boots[boot]} was node {node}'s in run {other['id']}",
                )
        their_rvs = [
            rv
            for rv in [_rv(str(their.get("resource_version") or ""))]
            + [_rv(str(o.get("resource_version") or "")) for o in their.get("objects") or []]
            if rv is not None
        ]
        if start_rv is not None and their_rvs:
            before = o_start < started
            if before and max(their_rvs) >= start_rv:
                raise AgentRunError(
                    422,
                    f"resourceVersions went back: run {other['id']}, earlier, saw "
                    f"{max(their_rvs)}, this run began at {start_rv}",
                )
            if not before and min(their_rvs) <= max([start_rv, *filter(None, object_rvs)]):
                raise AgentRunError(
                    422,
                    f"resourceVersions went back: run {other['id']}, later, began at "
                    f"{min(their_rvs)}",
                )
    for node, boot in facts["nodes"].items():
        # A node's boot IDs in time order: once it booted again, an earlier boot never returns.
        timeline = sorted([*history.get(node, []), (started, boot)])
        order: list[str] = []
        for _, b in timeline:
            if order and b != order[-1] and b in order:
                raise AgentRunError(422, f"node {node}'s boot ID returned to an earlier boot's")
            if not order or b != order[-1]:
                order.append(b)
