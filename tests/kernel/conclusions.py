"""What the battery concludes from node output, reduced to comparable facts.

Shared by the golden-fixture tests and the guest test: the same function reads the real
kernel's output (fixtures or a fresh guest boot) and the lab's emulated output, so "parses to
the same conclusions" is one equality.
"""

from __future__ import annotations

import re
from typing import Any

from kernel.battery import nodeparse


def iptables_conclusions(save_text: str) -> dict[str, Any]:
    services = nodeparse.iptables_sctp_rules(save_text, chain_prefix="KUBE-SERVICES")
    svc_chains = sorted(
        {m.group(0) for r in services for m in [re.search(r"KUBE-SVC-\w+", r)] if m}
    )
    dnat = nodeparse.iptables_sctp_rules(save_text, chain_prefix="KUBE-SEP-")
    dnat_targets = sorted(
        r.split("--to-destination ")[1].split()[0] for r in dnat if "-j DNAT" in r
    )
    ports = sorted(
        {int(m.group(1)) for r in services for m in [re.search(r"--dport (\d+)", r)] if m}
    )
    return {
        "svc_chains": svc_chains,
        "ports": ports,
        "dnat_endpoints": len(dnat_targets),
        "dnat_target_ports": sorted({t.rsplit(":", 1)[1] for t in dnat_targets}),
    }


def ipvs_conclusions(ipvsadm_text: str) -> list[dict[str, Any]]:
    return [
        {
            "scheduler": s.scheduler,
            "reals": len(s.reals),
            "forward": sorted({r[2] for r in s.reals}),
            "target_ports": sorted({r[1] for r in s.reals}),
        }
        for s in nodeparse.ipvs_sctp_services(ipvsadm_text)
    ]


def nft_conclusions(ruleset_text: str) -> list[str]:
    return [verdict for _ip, _port, verdict in nodeparse.nft_sctp_service_elements(ruleset_text)]
