"""A submission's one state, in words, from the evidence policy: counted; would count once a
maintainer verifies it; or does not count, and why. And, after a review, what changed on the
readiness page ("two-out-of-tree-plugins: unmet → met", or "no change: emulated evidence")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.timezone import now

from dashboard.domain.agreement import contradictions
from dashboard.domain.policy import (
    AGE,
    EMULATED,
    OUTCOME,
    PERIODIC,
    PROXIERS,
    RELEASE,
    TESTS_WRITTEN,
    TRUST,
    TWO_PLUGINS,
    Assessment,
    Policy,
    plugin_facts,
    run_item,
    submission_item,
)

# The criteria a submission can feed (the periodic job is our own runs only).
CRITERIA = (TESTS_WRITTEN, TWO_PLUGINS, PROXIERS)
SHORT = {
    EMULATED: "emulated evidence",
    RELEASE: "its Kubernetes release is too old",
    AGE: "too old",
    TRUST: "not verified",
}


@dataclass
class State:
    kind: str  # counted | would-count | does-not-count
    headline: str
    why: str
    criteria: list[dict[str, Any]] = field(default_factory=list)  # counted (or would be) for


def _why(assessments: list[Assessment]) -> str:
    """The reasons it does not count, each once."""
    seen: list[str] = []
    for a in assessments:
        for part in a.why.removeprefix("not counted: ").split("; "):
            if part and part not in seen:
                seen.append(part)
    return "; ".join(seen)


def state_of(sub: Any) -> State:
    pol = Policy(now=now())
    item = submission_item(sub, plugin_facts(sub.plugin))
    pending = sub.status == "pending_review"
    relax = frozenset({TRUST}) if pending else frozenset()
    assessed = {key: pol.assess(item, key, relax) for key in CRITERIA}
    counting = [
        {"key": key, "why": a.why.removeprefix("counts: ")}
        for key, a in assessed.items()
        if a.counts
    ]
    if sub.status == "rejected":
        reason = f": “{sub.review_reason}”" if sub.review_reason else ""
        return State("does-not-count", "Does not count", f"a maintainer rejected it{reason}")
    if counting:
        if pending:
            return State(
                "would-count",
                "Would count once a maintainer verifies it",
                "until then it is shown but not counted",
                counting,
            )
        return State("counted", "Counted", "verified by a maintainer", counting)
    blocked = [a for a in assessed.values() if not a.counts]
    general = [a for a in blocked if a.blocked - {OUTCOME}]
    why = _why(general or blocked)
    if pending:
        why += " (verifying it would not change that)"
    return State("does-not-count", "Does not count", why)


def short_reason(sub: Any) -> str:
    """Why a submission changes no criterion, in a few words ("emulated evidence")."""
    pol = Policy(now=now())
    item = submission_item(sub, plugin_facts(sub.plugin))
    assessed = [pol.assess(item, key) for key in CRITERIA]
    if any(a.counts for a in assessed):
        return "the criteria it counts for keep their status"
    for category in (EMULATED, RELEASE, AGE, TRUST):
        if any(category in a.blocked for a in assessed):
            return SHORT[category]
    return _why(assessed) or "it does not count"


def readiness_change(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """["key: unmet → met", …] for the criteria whose status changed."""
    return [
        f"{key}: {before.get(key, '?').replace('_', ' ')} → {status.replace('_', ' ')}"
        for key, status in after.items()
        if before.get(key) != status
    ]


def run_state(run: Any, outcomes: dict[str, str], reasons: dict[str, str]) -> State:
    """A finished run's one state: counted (for which criteria) or does not count, and why."""

    pol = Policy(now=now())
    against = contradictions(
        [
            {
                "id": run.pk,
                "cluster_id": run.cluster_id,
                "kubernetes_version": run.kubernetes_version,
                "battery": run.battery,
            }
        ]
    )
    item = run_item(run, outcomes, reasons, plugin_facts(run.plugin), against.get(run.pk))
    keys: tuple[str, ...] = (TESTS_WRITTEN,)
    if run.battery in ("basic", "all") and run.trigger == "periodic":
        keys += (PERIODIC,)
    if run.battery in ("connectivity", "all", "upstream"):
        keys += (TWO_PLUGINS, PROXIERS)
    assessed = {key: pol.assess(item, key) for key in keys}
    counting = [
        {"key": key, "why": a.why.removeprefix("counts: ")}
        for key, a in assessed.items()
        if a.counts
    ]
    if counting:
        return State("counted", "Counts as evidence", "for the criteria below", counting)
    blocked = list(assessed.values())
    general = [a for a in blocked if a.blocked - {OUTCOME}]
    return State("does-not-count", "Does not count", _why(general or blocked))


def run_result(state: str, outcomes: dict[str, str], error: str = "") -> tuple[str, str]:
    """(passed | failed | error | inconclusive | queued | running | cancelled, one line why)."""
    if state in ("queued", "running"):
        return state, ""
    if state == "cancelled":
        return "cancelled", error or "the run was cancelled"
    if state == "error":
        return "error", error or "the run ended in an error"
    failed = sorted(k for k, o in outcomes.items() if o == "failed")
    errored = sorted(k for k, o in outcomes.items() if o == "error")
    passed = [k for k, o in outcomes.items() if o == "passed"]
    if failed:
        return "failed", "failed: " + ", ".join(failed)
    if errored:
        return "error", "the harness could not decide: " + ", ".join(errored)
    if not passed:
        return "inconclusive", "no test reached a verdict (all skipped or not run)"
    skipped = sum(1 for o in outcomes.values() if o in ("skipped", "not_run"))
    return "passed", f"{len(passed)} passed" + (
        f", {skipped} skipped or not run (the environment cannot)" if skipped else ""
    )
