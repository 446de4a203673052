"""What a set of per-test outcomes proves: the flags the criteria query.

Runs and submissions both store these flags when their outcomes are known, so that the
readiness engine answers from indexed columns instead of re-reading every result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dashboard.domain.catalog import BASIC_KEYS, CONNECTIVITY_KEYS, Outcome
from dashboard.domain.policy import PluginFacts
from dashboard.domain.policy import qualifying as policy_qualifying
from kernel.vocabulary import Key


@dataclass(frozen=True)
class EvidenceFlags:
    has_connectivity: bool  # at least one connectivity test has an outcome other than not_run
    qualifying: bool  # qualifying connectivity evidence (contract §Criterion semantics)
    qualifying_reason: str  # why not, or a short "qualifies" sentence
    pod_to_service_passed: bool
    basic_ok: bool  # no basic test failed or errored
    basic_complete: bool  # every basic test has an outcome


def summarize(outcomes: Mapping[str, str], implements_network_policy: bool) -> EvidenceFlags:
    """The flags stored for the criteria's indexed lookups. `qualifying` is stored as the widest
    the evidence policy could accept (a NetworkPolicy exemption may be recorded later), so it is
    a prefilter only: dashboard.domain.policy decides, with the same rule, when it evaluates."""

    def get(key: str) -> str:
        return outcomes.get(key) or Outcome.NOT_RUN

    widest = PluginFacts(
        "prefilter",
        False,
        implements_network_policy,
        netpol_exemption="" if implements_network_policy else "(decided at evaluation)",
    )
    qualifying_now, reason = policy_qualifying(outcomes, widest)
    return EvidenceFlags(
        has_connectivity=any(get(k) != Outcome.NOT_RUN for k in CONNECTIVITY_KEYS),
        qualifying=qualifying_now,
        qualifying_reason=reason,
        pod_to_service_passed=get(Key.POD_TO_SERVICE) == Outcome.PASSED,
        basic_ok=not any(get(k) in (Outcome.FAILED, Outcome.ERROR) for k in BASIC_KEYS),
        basic_complete=all(get(k) != Outcome.NOT_RUN for k in BASIC_KEYS),
    )
