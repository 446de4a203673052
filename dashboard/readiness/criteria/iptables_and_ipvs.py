"""iptables-and-ipvs: for each of iptables and ipvs there is fresh counted evidence in which
pod-to-service passed on that demonstrated proxier (detected on the cluster for runs, declared
for verified submissions; the mode a cluster was registered with never counts by itself).
nftables is reported beside it, not required."""

from __future__ import annotations

from dashboard.catalog import Proxier, criterion_title
from dashboard.policy import PROXIERS, evidence_entry

from ..base import Context, Verdict
from ..evidence_lookup import connectivity
from ..whatif import with_what_if

KEY = PROXIERS
TITLE = criterion_title(KEY)
REQUIRED = (Proxier.IPTABLES, Proxier.IPVS)


def evaluate(ctx: Context) -> Verdict:
    return with_what_if(_evaluate, ctx)


def _evaluate(ctx: Context, relax: frozenset[str]) -> tuple[Verdict, set[str]]:
    items = connectivity(ctx)
    pol = ctx.policy
    rows, evidence, missing, stale = [], [], [], []
    used: set[str] = set()
    for mode in Proxier.values:
        # Evidence of this mode: demonstrated, or (to say why not) declared for it.
        pairs = [
            (i, pol.assess(i, KEY, relax))
            for i in items
            if i.proxier == mode or (not i.proxier and i.declared_proxier == mode)
        ]
        evidence += [evidence_entry(i, a) for i, a in pairs]
        good = [(i, a) for i, a in pairs if a.counts]
        required = mode in REQUIRED
        if good:
            state, why = "demonstrated", good[0][1].why
            for _, a in good:
                used |= a.relied
        elif any(a.stale_only for _, a in pairs):
            item = next(i for i, a in pairs if a.stale_only)
            state, why = "stale", f"last demonstrated {item.when:%Y-%m-%d}"
            if required:
                stale.append(f"{mode} ({why})")
        else:
            state = "not demonstrated"
            why = (
                f"{pairs[0][0].kind} {pairs[0][0].id}: {pairs[0][1].why}"
                if pairs
                else "no evidence"
            )
            if required:
                missing.append(f"{mode} ({why})" if pairs else mode)
        rows.append(
            {
                "proxier": mode,
                "required": required,
                "status": state,
                "why": why,
                "evidence": evidence_entry(*good[0]) if good else None,
            }
        )
    nft = next(r for r in rows if r["proxier"] == Proxier.NFTABLES)
    note = f"; nftables (not required): {nft['status']}"
    if not missing and not stale:
        return Verdict(
            KEY,
            TITLE,
            "met",
            "pod-to-service passed on both iptables and ipvs" + note,
            evidence,
            rows,
        ), used
    if not missing:
        return Verdict(
            KEY,
            TITLE,
            "stale",
            "only stale evidence for " + ", ".join(stale) + note,
            evidence,
            rows,
        ), used
    detail = "needs fresh counted evidence of pod-to-service passing on " + "; ".join(missing)
    if stale:
        detail += "; stale: " + ", ".join(stale)
    return Verdict(KEY, TITLE, "unmet", detail + note, evidence, rows), used
