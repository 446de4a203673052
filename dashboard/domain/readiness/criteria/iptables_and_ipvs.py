"""iptables-and-ipvs: for each of iptables and ipvs there is fresh counted evidence in which
pod-to-service passed on that demonstrated proxier (detected on the cluster for runs, declared
for verified submissions; the mode a cluster was registered with never counts by itself).
nftables is reported beside it, not required."""

from __future__ import annotations

from typing import Any

from dashboard.domain.catalog import Proxier, criterion_title
from dashboard.domain.policy import PROXIERS, evidence_entry, on_proxier
from dashboard.domain.readiness.base import Context, Verdict
from dashboard.domain.readiness.evidence_lookup import connectivity
from dashboard.domain.readiness.whatif import with_what_if

KEY = PROXIERS
TITLE = criterion_title(KEY)
REQUIRED = (Proxier.IPTABLES, Proxier.IPVS)
# The post-GA watch follows the proxiers people run (issue 23): nftables is GA since 1.33 and
# on its way to being the default; ipvs is deprecated (KEP-5495). Neither changes the KEP's
# criterion, which stays "iptables and ipvs".
NOTES: dict[str, str] = {
    Proxier.IPVS: (
        "deprecated since Kubernetes 1.35 (KEP-5495); the KubeProxyIPVS feature gate is "
        "planned to be off by default in 1.40"
    ),
    Proxier.NFTABLES: (
        "GA since Kubernetes 1.33 and on its way to becoming the default; followed here, "
        "not required by the KEP's criterion"
    ),
}
MODE_STATUS = {"demonstrated": "met", "stale": "stale", "not demonstrated": "unmet"}


def evaluate(ctx: Context) -> Verdict:
    return with_what_if(_evaluate, ctx)


def _evaluate(ctx: Context, relax: frozenset[str]) -> tuple[Verdict, set[str]]:
    items = connectivity(ctx)
    pol = ctx.policy
    rows: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    missing: list[str] = []
    stale: list[str] = []
    used: set[str] = set()
    for mode in Proxier.values:
        # Evidence of this mode: demonstrated, or (to say why not) declared for it.
        pairs = [(i, pol.assess(i, KEY, relax)) for i in items if on_proxier(i, mode)]
        evidence += [evidence_entry(i, a) for i, a in pairs]
        good = [(i, a) for i, a in pairs if a.counts]
        required = mode in REQUIRED
        if good:
            state, why = "demonstrated", good[0][1].why
            for _, a in good:
                used |= a.relied
        elif any(a.stale_only for _, a in pairs):
            item = next(i for i, a in pairs if a.stale_only)
            day = item.when.strftime("%Y-%m-%d") if item.when else "at no known time"
            state, why = "stale", f"last demonstrated {day}"
            if required:
                stale.append(f"{mode} ({why})")
        else:
            state = "not demonstrated"
            # The candidate closest to counting (fewest blocking conditions, then the newest),
            # not whichever came first (issue 39).
            near = min(pairs, key=lambda pair: len(pair[1].blocked)) if pairs else None
            why = f"{near[0].kind} {near[0].id}: {near[1].why}" if near else "no evidence"
            if required:
                missing.append(f"{mode} ({why})" if pairs else mode)
        rows.append(
            {
                "proxier": mode,
                "required": required,
                "status": state,
                "why": why,
                "evidence": evidence_entry(*good[0]) if good else None,
                "note": NOTES.get(str(mode), ""),
                "mode_evidence": [evidence_entry(i, a) for i, a in pairs],
            }
        )
    nft = next(r for r in rows if r["proxier"] == Proxier.NFTABLES)
    note = f"; nftables (not required): {nft['status']}; ipvs: {NOTES[Proxier.IPVS]}"
    proxiers = {
        r["proxier"]: {
            "status": MODE_STATUS[r["status"]],
            "detail": (
                f"pod-to-service passed on a demonstrated {r['proxier']}"
                if r["status"] == "demonstrated"
                else f"{r['status']}: {r['why']}"
            ),
            "evidence": r.pop("mode_evidence"),
            "required": r["required"],
            **({"note": r["note"]} if r["note"] else {}),
        }
        for r in rows
    }
    if not missing and not stale:
        return Verdict(
            KEY,
            TITLE,
            "met",
            "pod-to-service passed on both iptables and ipvs" + note,
            evidence,
            rows,
            proxiers=proxiers,
        ), used
    if not missing:
        return Verdict(
            KEY,
            TITLE,
            "stale",
            "only stale evidence for " + ", ".join(stale) + note,
            evidence,
            rows,
            proxiers=proxiers,
        ), used
    detail = "needs fresh counted evidence of pod-to-service passing on " + "; ".join(missing)
    if stale:
        detail += "; stale: " + ", ".join(stale)
    return Verdict(KEY, TITLE, "unmet", detail + note, evidence, rows, proxiers=proxiers), used
