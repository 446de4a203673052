"""Plain functions that turn models into the contract's JSON shapes."""

from __future__ import annotations

from typing import Any

from dashboard.catalog import ALL_KEYS, Outcome, keys_of
from dashboard.models import CatalogTest, Cluster, Run, Submission


def iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def catalog_entry(t: CatalogTest) -> dict[str, Any]:
    return {"key": t.key, "title": t.title, "battery": t.battery, "tags": t.tags,
            "upstream_names": t.upstream_names, "kep_text": t.kep_text}


def cluster(c: Cluster, last_run: Run | None = None) -> dict[str, Any]:
    # The kubeconfig is a secret: it is never part of any answer.
    return {
        "name": c.name,
        "url": c.get_absolute_url(),
        "owner": c.owner.name if c.owner_id and c.owner else None,
        "plugin": c.plugin.slug,
        "plugin_version": c.plugin_version,
        "kubernetes_version": c.kubernetes_version,
        "proxier": c.proxier,
        "node_access": c.node_access,
        "load_balancer": c.load_balancer,
        "kubenet": c.kubenet,
        "lab": c.lab,
        "emulated": c.emulated or c.lab,
        "approved": c.approved,
        "basic_only": c.basic_only,
        "enabled": c.enabled,
        # False when the stored kubeconfig could not be decrypted (register the cluster again).
        "credentials_ok": c.credentials_ok,
        "last_run": {"id": last_run.id, "state": last_run.state, "battery": last_run.battery,
                     "finished": iso(last_run.finished)} if last_run else None,
    }


def run(r: Run, results: list | None = None) -> dict[str, Any]:
    results = list(r.results.all()) if results is None else results
    by_key = {res.test_key: res for res in results}
    out: dict[str, Any] = {}
    for key in keys_of(r.battery):
        res = by_key.get(key)
        if res is None:
            out[key] = {"outcome": Outcome.NOT_RUN, "reason": "no result yet" if r.state in ("queued", "running")
                        else "no result recorded"}
        else:
            out[key] = {"outcome": res.outcome, "reason": res.reason, "duration": res.duration,
                        "evidence": res.evidence, "finished": iso(res.finished)}
    extra = {key: {"outcome": res.outcome, "reason": res.reason, "duration": res.duration,
                   "evidence": res.evidence} for key, res in sorted(by_key.items()) if key not in ALL_KEYS}
    return {
        "id": r.id,
        "url": r.get_absolute_url(),
        "cluster": r.cluster.name,
        "plugin": r.plugin.slug,
        "plugin_version": r.plugin_version,
        "kubernetes_version": r.kubernetes_version,
        "proxier": r.proxier,
        "proxier_detected": r.proxier_detected or None,
        "emulated": r.emulated,
        "battery": r.battery,
        "trigger": r.trigger,
        "state": r.state,
        "status": r.state,
        "error": r.error,
        "created": iso(r.created),
        "started": iso(r.started),
        "finished": iso(r.finished),
        "heartbeat": iso(r.heartbeat),
        "duration_seconds": r.duration.total_seconds() if r.duration else None,
        "fingerprint": r.fingerprint,
        "qualifying": r.qualifying if r.has_connectivity else None,
        "qualifying_reason": r.qualifying_reason,
        "results": out,
        # TCP/UDP conformance checks the basic battery adds; never part of a criterion.
        "conformance": extra,
    }


def submission_summary(s: Submission) -> dict[str, Any]:
    """A list item: no per-test details, no report, no warning texts (contract)."""
    return {
        "id": s.id,
        "url": s.get_absolute_url(),
        "status": s.status,
        "plugin": s.plugin.slug,
        "vendor": s.vendor.name,
        "plugin_version": s.plugin_version,
        "kubernetes_version": s.kubernetes_version,
        "proxier": s.proxier,
        "cluster": s.cluster_name or None,
        "kind": s.kind,
        "sha256": s.sha256,
        "size": s.size,
        "created": iso(s.created),
        "run_at": iso(s.run_at),
        "run_at_source": s.run_at_source or None,
        "emulated": s.emulated,
        "counts": s.counts,
        "qualifying": s.qualifying,
    }


def submission(s: Submission) -> dict[str, Any]:
    results = {k: {"outcome": v.get("outcome", Outcome.NOT_RUN), "upstream_names": v.get("upstream_names", []),
                   "reasons": v.get("reasons", [])}
               for k, v in (s.results or {}).items()}
    for key in ALL_KEYS:
        results.setdefault(key, {"outcome": Outcome.NOT_RUN, "upstream_names": [], "reasons": []})
    return {
        "id": s.id,
        "url": s.get_absolute_url(),
        "status": s.status,
        "plugin": s.plugin.slug,
        "vendor": s.vendor.name,
        "plugin_version": s.plugin_version,
        "kubernetes_version": s.kubernetes_version,
        "detected_kubernetes_version": s.detected_kubernetes_version or None,
        "proxier": s.proxier,
        "cluster": s.cluster_name or None,
        "kind": s.kind,
        "filename": s.filename,
        "sha256": s.sha256,
        "size": s.size,
        "uploaded_by": s.uploaded_by,
        "created": iso(s.created),
        "run_at": iso(s.run_at),
        "run_at_source": s.run_at_source or None,
        "emulated": s.emulated,
        "counts": s.counts,
        "results": results,
        "warnings": s.warnings,
        "qualifying": s.qualifying,
        "qualifying_reason": s.qualifying_reason,
        "review": {"by": s.reviewed_by.get_username() if s.reviewed_by_id and s.reviewed_by else None,
                   "at": iso(s.reviewed_at), "reason": s.review_reason},
        # Warnings are stored and shown once (above); older reports held a copy.
        "report": {k: v for k, v in (s.report or {}).items() if k != "warnings"},
    }
