"""Small builders of evidence histories for tests (runs, results, submissions, schedules)."""

from __future__ import annotations

import hashlib
import io
import itertools
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.core.management import call_command
from django.utils.timezone import now

from dashboard.domain.catalog import (
    ALL_KEYS,
    BASIC_KEYS,
    CONNECTIVITY_KEYS,
    Outcome,
    kubernetes_minor,
)
from dashboard.domain.evidence import summarize
from dashboard.domain.ingest.upstream_names import fed_keys
from dashboard.domain.models import Cluster, Plugin, Run, Schedule, Submission, TestResult, Vendor

_seq = itertools.count(1)

PASSING = dict.fromkeys(ALL_KEYS, Outcome.PASSED)


def plugin(slug: str, *, in_tree: bool = False, netpol: bool = True) -> Plugin:
    obj, _ = Plugin.objects.get_or_create(
        slug=slug, defaults={"name": slug, "in_tree": in_tree, "implements_network_policy": netpol}
    )
    return obj


KUBERNETES = (
    "1.34.2"  # a release the evidence policy counts (READINESS_MIN_KUBERNETES default 1.34)
)


def cluster(
    name: str | None = None,
    *,
    plugin_slug: str = "calico",
    proxier: str = "iptables",
    owner: Vendor | None = None,
    approved: bool = True,
    **kw: Any,
) -> Cluster:
    """A real, approved cluster by default: its evidence counts unless a test says otherwise."""
    return Cluster.objects.create(
        name=name or f"cluster-{next(_seq)}",
        plugin=plugin(plugin_slug),
        proxier=proxier,
        owner=owner,
        plugin_version=kw.pop("plugin_version", "1.0.0"),
        kubernetes_version=kw.pop("kubernetes_version", KUBERNETES),
        approved=approved,
        **kw,
    )


def run(
    c: Cluster,
    outcomes: Mapping[str, str] | None = None,
    *,
    battery: str = "all",
    finished: datetime | None = None,
    days_ago: float = 1,
    state: str = Run.State.FINISHED,
    trigger: str = Run.Trigger.MANUAL,
    schedule: Schedule | None = None,
    detected: str | None = "same",
    module_before: dict[str, bool | None] | None = None,
    emulated: bool | None = None,
) -> Run:
    """A run; by default kube-proxy's mode was detected as registered and sctp.ko was not loaded
    before the tests (a conclusive basic run). `detected=None`: the proxier was undetermined."""
    when = finished or now() - timedelta(days=days_ago)
    proxier_detected = c.proxier if detected == "same" else (detected or "")
    fingerprint = {
        "proxier_detected": proxier_detected or None,
        "emulated": bool(emulated or c.emulated),
        "kubernetes_version": c.kubernetes_version,
        "sctp_module_before": {"node-1": False} if module_before is None else module_before,
    }
    keys = {"basic": BASIC_KEYS, "connectivity": CONNECTIVITY_KEYS}.get(battery, ALL_KEYS)
    if battery == "upstream":
        # upstream's e2e.test reports only the catalog tests it has a spec for at the release
        # (never pod-to-loadbalancer, and service-iptables-rules only where the spec existed)
        keys = upstream_keys(c.kubernetes_version)
    outcomes = {k: v for k, v in (PASSING if outcomes is None else outcomes).items() if k in keys}
    r = Run(
        cluster=c,
        plugin=c.plugin,
        plugin_version=c.plugin_version,
        kubernetes_version=c.kubernetes_version,
        proxier=c.proxier,
        battery=battery,
        trigger=trigger,
        schedule=schedule,
        state=state,
        created=when - timedelta(minutes=5),
        started=when - timedelta(minutes=4),
        finished=when,
        heartbeat=when,
        fingerprint=fingerprint,
        proxier_detected=proxier_detected,
        emulated=bool(emulated or c.emulated or c.lab),
        kubernetes_minor=kubernetes_minor(c.kubernetes_version),
    )
    r.apply_flags(summarize(outcomes, c.plugin.implements_network_policy))
    r.save()
    TestResult.objects.bulk_create(
        TestResult(run=r, test_key=k, outcome=o, reason=f"{k} {o}", finished=when)
        for k, o in outcomes.items()
    )
    return r


def upstream_keys(kubernetes_version: str) -> tuple[str, ...]:
    """The catalog tests upstream's specs feed at the release, in catalog order."""
    fed = fed_keys(kubernetes_version)
    return tuple(k for k in ALL_KEYS if k in fed)


def vendor(name: str = "Vendor", plugins: tuple[str, ...] = ("calico",)) -> Vendor:
    v, _ = Vendor.objects.get_or_create(name=name)
    for slug in plugins:
        v.plugins.add(plugin(slug))
    return v


def submission(
    plugin_slug: str,
    outcomes: dict[str, str] | None = None,
    *,
    status: str = Submission.Status.VERIFIED,
    days_ago: float = 1,
    proxier: str = "iptables",
    plugin_version: str = "1.0",
    kubernetes_version: str = KUBERNETES,
    run_days_ago: float | None = None,
    emulated: bool = False,
) -> Submission:
    p = plugin(plugin_slug)
    outcomes = dict(PASSING if outcomes is None else outcomes)
    outcomes.pop("pod-to-loadbalancer", None)  # no upstream test feeds it
    content = f"submission {next(_seq)}".encode()
    s = Submission(
        plugin=p,
        vendor=vendor(f"{plugin_slug} vendor", (plugin_slug,)),
        uploaded_by="test",
        plugin_version=plugin_version,
        kubernetes_version=kubernetes_version,
        proxier=proxier,
        status=status,
        kind="junit",
        kubernetes_minor=kubernetes_minor(kubernetes_version),
        emulated=emulated,
        run_at=now() - timedelta(days=days_ago if run_days_ago is None else run_days_ago),
        run_at_source="file",
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        content=content,
        results={k: {"outcome": o, "upstream_names": []} for k, o in outcomes.items()},
        created=now() - timedelta(days=days_ago),
    )
    s.apply_flags(summarize(outcomes, p.implements_network_policy))
    s.save()
    return s


def schedule(
    c: Cluster, *, battery: str = "basic", interval_minutes: int = 24 * 60, enabled: bool = True
) -> Schedule:
    return Schedule.objects.create(
        cluster=c, battery=battery, interval_minutes=interval_minutes, enabled=enabled
    )


def with_outcome(key: str, outcome: str, base: dict[str, str] | None = None) -> dict[str, str]:
    out = dict(PASSING if base is None else base)
    out[key] = outcome
    return out


def issued_token(slug: str) -> str:
    """A new vendor "<slug> inc" with this plugin, and its token, made as an operator makes
    them (the issue_token command)."""
    out = io.StringIO()
    call_command(
        "issue_token",
        "--vendor",
        f"{slug} inc",
        "--plugins",
        slug,
        stdout=out,
        stderr=io.StringIO(),
    )
    return out.getvalue().strip().splitlines()[-1]
