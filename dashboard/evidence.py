"""What a set of per-test outcomes proves: the flags the criteria query.

Runs and submissions both store these flags when their outcomes are known, so that the
readiness engine answers from indexed columns instead of re-reading every result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .catalog import BASIC_KEYS, CONNECTIVITY_KEYS, Outcome


@dataclass(frozen=True)
class EvidenceFlags:
    has_connectivity: bool  # at least one connectivity test has an outcome other than not_run
    qualifying: bool  # qualifying connectivity evidence (contract §Criterion semantics)
    qualifying_reason: str  # why not, or a short "qualifies" sentence
    pod_to_service_passed: bool
    basic_ok: bool  # no basic test failed or errored
    basic_complete: bool  # every basic test has an outcome


def summarize(outcomes: Mapping[str, str], implements_network_policy: bool) -> EvidenceFlags:
    def get(key: str) -> str:
        return outcomes.get(key) or Outcome.NOT_RUN

    has_connectivity = any(get(k) != Outcome.NOT_RUN for k in CONNECTIVITY_KEYS)
    problems: list[str] = []
    for key in CONNECTIVITY_KEYS:
        if get(key) in (Outcome.FAILED, Outcome.ERROR):
            problems.append(f"{key} {get(key)}")
    for key in ("pod-to-pod", "pod-to-service"):
        if get(key) not in (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR):
            problems.append(f"{key} {get(key).replace('_', ' ')}")
    if implements_network_policy and get("netpol-allow-deny") not in (
        Outcome.PASSED,
        Outcome.FAILED,
        Outcome.ERROR,
    ):
        problems.append(f"netpol-allow-deny {get('netpol-allow-deny').replace('_', ' ')}")
    qualifying = not problems
    if qualifying:
        reason = "pod-to-pod and pod-to-service passed" + (
            ", netpol-allow-deny passed" if implements_network_policy else " (no NetworkPolicy)"
        )
    else:
        reason = ", ".join(problems)
    return EvidenceFlags(
        has_connectivity=has_connectivity,
        qualifying=qualifying,
        qualifying_reason=reason,
        pod_to_service_passed=get("pod-to-service") == Outcome.PASSED,
        basic_ok=not any(get(k) in (Outcome.FAILED, Outcome.ERROR) for k in BASIC_KEYS),
        basic_complete=all(get(k) != Outcome.NOT_RUN for k in BASIC_KEYS),
    )
