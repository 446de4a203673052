"""The what-if of a verdict: would evidence that does not count have met the criterion?

A criterion evaluates once as the policy says, and — when unmet — again with emulated evidence
allowed, then with every condition but the outcomes relaxed. The answer only adds a sentence to
the detail ("would be met on emulated clusters only: not counted"); it never changes a status.
"""

from __future__ import annotations

from collections.abc import Callable

from dashboard.domain.policy import AGE, EMULATED, RELEASE, TRUST, WHAT_IF_ANY, WHAT_IF_EMULATED
from dashboard.domain.readiness.base import Context, Verdict

WOULD_BE_MET_EMULATED = "would be met on emulated clusters only: not counted"
_NAMES = {
    EMULATED: "emulated clusters",
    TRUST: "unapproved clusters or unverified submissions",
    RELEASE: "older Kubernetes releases",
    AGE: "evidence older than the freshness window",
}

Evaluate = Callable[[Context, frozenset[str]], tuple[Verdict, set[str]]]


def with_what_if(evaluate: Evaluate, ctx: Context) -> Verdict:
    """`evaluate(ctx, relax)` returns the verdict and the relaxed conditions it relied on."""
    verdict, _ = evaluate(ctx, frozenset())
    if verdict.status == "met":
        return verdict
    alt, used = evaluate(ctx, WHAT_IF_EMULATED)
    if alt.status == "met":
        verdict.what_if = WOULD_BE_MET_EMULATED
    else:
        wide, used_wide = evaluate(ctx, WHAT_IF_ANY)
        if wide.status == "met" and used_wide:
            names = ", ".join(_NAMES[c] for c in sorted(used_wide))
            verdict.what_if = (
                f"would be met with evidence that does not count ({names}): not counted"
            )
        elif used or EMULATED in used_wide:
            verdict.what_if = (
                "emulated evidence is not counted; with it the criterion would still be unmet"
            )
    if verdict.what_if:
        verdict.detail = f"{verdict.detail}; {verdict.what_if}"
    return verdict
