"""How outcomes look on every page: a symbol and a colour, never colour alone."""

from __future__ import annotations

from typing import Any

SYMBOL = {
    "passed": "✔",
    "failed": "✘",
    "error": "!",
    "skipped": "↷",
    "not_run": "∅",
    "missing": "—",
    "running": "…",
    "queued": "…",
}
LABEL = {
    "passed": "passed",
    "failed": "failed",
    "error": "error (the harness broke, not the cluster)",
    "skipped": "skipped",
    "not_run": "not run",
    "missing": "no evidence",
    "running": "running",
    "queued": "waiting",
}
# Short names for places with room for a word, not a title (the clusters list, phone cards).
SHORT = {
    "declare-sctp-ports": "ports",
    "hostport-kubenet": "hostport",
    "service-iptables-rules": "svc rules",
    "netpol-sctp-blocks-tcp-udp": "netpol",
    "pod-to-pod": "pod→pod",
    "pod-to-service": "pod→svc",
    "pod-to-loadbalancer": "pod→LB",
    "netpol-allow-deny": "netpol",
}
# Outcomes that say something about the cluster; skips and gaps do not count in pass rates.
DECIDED = ("passed", "failed", "error")


def cell(outcome: str, **extra: Any) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "symbol": SYMBOL.get(outcome, "?"),
        "label": LABEL.get(outcome, outcome),
        **extra,
    }
