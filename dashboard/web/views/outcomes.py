"""How outcomes look on every page: a symbol and a colour, never colour alone."""

from __future__ import annotations

from typing import Any

from kernel.vocabulary import Key

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
SHORT: dict[str, str] = {
    Key.DECLARE_SCTP_PORTS: "ports",
    Key.HOSTPORT_KUBENET: "hostport",
    Key.SERVICE_IPTABLES_RULES: "svc rules",
    Key.NETPOL_SCTP_BLOCKS_TCP_UDP: "netpol",
    Key.POD_TO_POD: "pod→pod",
    Key.POD_TO_SERVICE: "pod→svc",
    Key.POD_TO_LOADBALANCER: "pod→LB",
    Key.NETPOL_ALLOW_DENY: "netpol",
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
