"""A run's capability fingerprint as labelled facts: the cluster's, per node, and the worker's.

The battery stores a flat JSON mapping (kernel/battery/runner.py); the pages must never show
it as Python reprs. Facts about the worker host (its kernel's SCTP, pysctp) are labelled as
the worker's: they say nothing about the cluster.
"""

from __future__ import annotations

from typing import Any

from dashboard.web.templatetags.pages import plain

CLUSTER_FACTS = [
    # key, label, what None means
    ("kubernetes_version", "Kubernetes (API server)", "unknown"),
    ("emulated", "Emulated cluster (the lab)", "unknown"),
    ("cni_detected", "CNI plugin (from its DaemonSet)", "could not be determined"),
    ("proxier_declared", "kube-proxy mode, as registered", "not registered"),
    # The demonstrated proxier (contract): the mode whose SCTP rules for the Service under test
    # were on the node that carried it; kube-proxy's own answer is shown apart, never credited.
    (
        "proxier_detected",
        "Proxier demonstrated (its SCTP rules carried the traffic)",
        "not demonstrated",
    ),
    ("kube_proxy_mode", "kube-proxy mode, as kube-proxy reports it", "could not be determined"),
    ("service_dataplane", "Service dataplane", "unknown"),
    ("shared_kernel", "Nodes share one host kernel (kind-style)", "unknown"),
    ("feature_gate", "SCTPSupport feature gate", "unknown"),
    ("node_access", "Privileged (hostexec) pods", "unknown"),
    ("load_balancer", "LoadBalancer services get an address", "not tried in this run"),
    ("node_count", "Nodes", "unknown"),
    # Issue 40: a basic test's outcome follows upstream's check (at most 2 nodes, 2 specs);
    # this is ours, a fact beside the outcomes, which a conclusive basic run needs to hold.
    (
        "sctp_invariant_held",
        (
            "sctp.ko invariant held (ours, stricter than upstream: every battery node, around "
            "every basic test)"
        ),
        "not checked",
    ),
]
PER_NODE = {
    "sctp_module_before": "sctp.ko loaded before the tests",
    "sctp_module_after": "sctp.ko loaded after the tests",
}
WORKER_FACTS = [
    ("available", "Kernel SCTP on the worker host"),
    ("reason", "Why"),
    ("pysctp_version", "pysctp on the worker"),
]
# Other facts the battery records, labelled in words (anything unknown still shows its key).
MORE_FACTS = {
    "proxy_mode_answer": "kube-proxy's answer at /proxyMode",
    "proxier_tables": "Proxier tables holding the probe service",
    "cni_daemonsets": "CNI DaemonSets seen",
    "cni_configmaps_error": "CNI ConfigMaps",
    "cni_detection_error": "CNI detection",
    "cni": "CNI detection details",
    "ready_schedulable_nodes": "Nodes upstream's specs count (ready, schedulable, untainted)",
    "nodes_not_counted": "Nodes upstream's specs do not count",
}
PROXIER_SOURCE = {
    "proxyMode": "kube-proxy mode, read from /proxyMode (not credited by itself)",
    "rules": "kube-proxy mode, from the node's proxier rules",
}
HANDLED = (
    {k for k, _, _ in CLUSTER_FACTS}
    | set(PER_NODE)
    | {
        "node_names",
        "battery_nodes",
        "worker_sctp",
        "proxier_source",
        "cni_mismatch",
        "proxier_demonstrated",
        "sctp_invariant",
    }
)


def _value(v: Any, none: str = "unknown") -> dict[str, Any]:
    if v is True:
        return {"text": "yes", "symbol": "✔", "state": "yes"}
    if v is False:
        return {"text": "no", "symbol": "✘", "state": "no"}
    if v is None:
        return {"text": none, "symbol": "", "state": "unknown"}
    return {"text": plain(v), "symbol": "", "state": "value"}


def facts(fingerprint: dict[str, Any] | None) -> dict[str, Any]:
    fp = dict(fingerprint or {})
    cluster = [
        {"key": key, "label": label, **_value(fp[key], none)}
        for key, label, none in CLUSTER_FACTS
        if key in fp
    ]
    demonstrated = fp.get("proxier_demonstrated")
    for f in cluster:
        if f["key"] == "kube_proxy_mode" and fp.get("proxier_source") in PROXIER_SOURCE:
            f["label"] = PROXIER_SOURCE[fp["proxier_source"]]
        if (
            f["key"] == "proxier_detected"
            and f["state"] == "unknown"
            and isinstance(demonstrated, dict)
            and demonstrated.get("detail")
        ):
            f["text"] = plain(demonstrated["detail"])  # e.g. "not demonstrated: no node access"
    if fp.get("cni_detected"):
        # Known plugin: a mismatch is a sentence, its absence a plain "no" (never "unknown").
        mismatch = fp.get("cni_mismatch")
        cluster.append(
            {
                "key": "cni_mismatch",
                "label": "CNI differs from the registered plugin",
                **(
                    {"text": f"yes: {mismatch}", "symbol": "⚠", "state": "value"}
                    if mismatch
                    else _value(False)
                ),
            }
        )
    names = list(fp.get("node_names") or [])
    battery = list(fp.get("battery_nodes") or [])
    for key in PER_NODE:
        if isinstance(fp.get(key), dict):
            names += [n for n in fp[key] if n not in names]
    names += [n for n in battery if n not in names]
    columns = [(key, label) for key, label in PER_NODE.items() if isinstance(fp.get(key), dict)]
    nodes = [
        {
            "name": n,
            "used": n in battery,
            "cells": [
                {"label": label, **_value(fp[key].get(n), "not checked")} for key, label in columns
            ],
        }
        for n in names
    ]
    worker_raw = fp.get("worker_sctp")
    worker = []
    if isinstance(worker_raw, dict):
        worker = [
            {"key": f"worker_sctp.{key}", "label": label, **_value(worker_raw[key])}
            for key, label in WORKER_FACTS
            if key in worker_raw
        ]
    elif worker_raw is not None:
        worker = [{"key": "worker_sctp", "label": WORKER_FACTS[0][1], **_value(worker_raw)}]
    invariant = fp.get("sctp_invariant")
    if isinstance(invariant, dict) and isinstance(invariant.get("tests"), dict):
        broken = [
            f"{test} on {', '.join(fact.get('changed') or [])}"
            for test, fact in invariant["tests"].items()
            if isinstance(fact, dict) and fact.get("held") is False
        ]
        if broken:
            cluster.append(
                {
                    "key": "sctp_invariant",
                    "label": "sctp.ko got loaded during",
                    "text": plain("; ".join(broken)),
                    "symbol": "⚠",
                    "state": "value",
                }
            )
    other = [
        {"key": key, "label": MORE_FACTS.get(key, key.replace("_", " ")), **_value(v)}
        for key, v in sorted(fp.items())
        if key not in HANDLED
    ]
    return {
        "cluster": cluster + other,
        "nodes": nodes,
        "node_columns": [label for _, label in columns],
        "has_battery_nodes": bool(battery),
        "worker": worker,
        "empty": not fp,
    }
