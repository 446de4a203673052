"""iptables-and-ipvs: for each of iptables and ipvs there is fresh evidence, on a cluster of that
mode, in which pod-to-service passed. nftables is reported beside it, not required."""

from __future__ import annotations

from dashboard.catalog import Proxier

from ..base import Context, Verdict, day
from ..evidence_lookup import finished_runs, load, newest, verified_submissions

KEY = "iptables-and-ipvs"
TITLE = "Both iptables and ipvs proxiers demonstrated to work with SCTP"
REQUIRED = (Proxier.IPTABLES, Proxier.IPVS)


def evaluate(ctx: Context) -> Verdict:
    run_ids, sub_ids = {}, {}
    for mode in Proxier.values:
        # Newest evidence of each mode, whatever its age: older than the window means stale.
        run_ids[mode] = (
            finished_runs().filter(proxier=mode, pod_to_service_passed__in=[True])  # index-friendly on SQLite
            .order_by("-finished").values_list("id", flat=True).first()
        )
        sub_ids[mode] = (
            verified_submissions().filter(proxier=mode, pod_to_service_passed__in=[True])  # index-friendly on SQLite
            .order_by("-created").values_list("id", flat=True).first()
        )
    found = load(run_ids.values(), sub_ids.values())
    rows, evidence, missing, stale = [], [], [], []
    for mode in Proxier.values:
        best = newest(found.get(("run", run_ids[mode])), found.get(("submission", sub_ids[mode])))
        required = mode in REQUIRED
        if best is None:
            state = "not demonstrated"
            if required:
                missing.append(mode)
        elif ctx.is_fresh(best.when):
            state = "demonstrated"
        else:
            state = "stale"
            if required:
                stale.append(f"{mode} (last {day(best.when)})")
        if best is not None:
            evidence.append(best.ref)
        rows.append({"proxier": mode, "required": required, "status": state,
                     "evidence": best.ref.to_dict() if best else None})
    nft = next(r for r in rows if r["proxier"] == Proxier.NFTABLES)
    note = f"; nftables (not required): {nft['status']}"
    if not missing and not stale:
        return Verdict(KEY, TITLE, "met", "pod-to-service passed on both iptables and ipvs clusters" + note,
                       evidence, rows)
    if not missing:
        return Verdict(KEY, TITLE, "stale", "only stale evidence for " + ", ".join(stale) + note, evidence, rows)
    detail = "needs fresh evidence of pod-to-service passing on " + " and ".join(missing)
    if stale:
        detail += "; stale: " + ", ".join(stale)
    return Verdict(KEY, TITLE, "unmet", detail + note, evidence, rows)
