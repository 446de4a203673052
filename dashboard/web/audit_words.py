"""Audit actions in words: "maria approved cluster calico-ipvs", not `cluster.approve`."""

from __future__ import annotations

from typing import Any

# action -> the verb phrase put before the entry's target ("cluster calico-ipvs")
VERBS = {
    "cluster.register": "registered",
    "cluster.update": "changed",
    "cluster.approve": "approved",
    "cluster.unapprove": "withdrew the approval of",
    "cluster.basic_only": "made basic-only (connectivity runs refused)",
    "cluster.basic_only_cleared": "allowed connectivity runs again on",
    "cluster.mode": "changed how the dashboard reaches",
    "cluster.token_renewed": "renewed the access token of",
    "cluster.agent_key": "issued an agent key for",
    "cluster.agent_key_reset": "reset the agent key of",
    "run.request": "requested",
    "run.verify": "verified the self-reported",
    "run.unverify": "withdrew the verification of the self-reported",
    "run.agent": "received from the in-cluster agent",
    "submission.create": "uploaded",
    "submission.verify": "verified",
    "submission.reject": "rejected",
    "signoff": "signed off",
    "schedule.create": "created",
    "schedule.update": "changed",
    "schedule.pause": "paused",
    "schedule.resume": "resumed",
    "schedule.delete": "deleted",
    "token.issue": "issued an API token for",
    "token.revoke": "revoked an API token of",
    "plugin.netpol_exemption": "recorded a NetworkPolicy exemption for",
    "plugin.netpol_exemption_cleared": "cleared the NetworkPolicy exemption of",
    "criterion.regressed": "saw a criterion regress:",
}

DETAIL_WORDS = {
    "criteria_met": "every criterion met",
    "kubernetes_release": "Kubernetes release",
    "unmet_criteria": "unmet criteria",
    "override_reason": "reason for the override",
    "approved": "approved",
    "server": "API server",
    "plugin": "plugin",
    "reason": "reason",
    "comment": "comment",
    "counts": "outcomes",
    "changes": "changes",
    "effect": "what it changed on the readiness page",
}


def action_words(action: str) -> str:
    """The verb phrase alone (filters list these)."""
    return VERBS.get(action, action.replace(".", " ").replace("_", " "))


def sentence(action: str, target: str) -> str:
    return f"{action_words(action)} {target}".strip()


def detail_label(key: str) -> str:
    return DETAIL_WORDS.get(key, key.replace("_", " "))


def changes_words(changes: Any) -> str:
    if not isinstance(changes, dict):
        return ""
    return "; ".join(
        f"{k.replace('_', ' ')} {v[0] if v[0] not in (None, '') else '(empty)'} → "
        f"{v[1] if v[1] not in (None, '') else '(empty)'}"
        for k, v in changes.items()
        if isinstance(v, (list, tuple)) and len(v) == 2
    )
