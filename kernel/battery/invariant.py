"""The sctp.ko invariant of the basic tests (KEP-614 Test Plan).

"If sctp.ko is not loaded before the test, then it is also not loaded after the test":
the basic tests must run on nodes without the module, so declaring SCTP ports must never
pull it in.
"""

from __future__ import annotations

CHANGED = "The state of the sctp module has changed due to the test case"
INCONCLUSIVE = "module invariant inconclusive: sctp.ko was already loaded before the test"
NOT_CHECKED = "inconclusive: the sctp.ko invariant could not be checked"


def _state(value: bool | None) -> str:
    return {True: "loaded", False: "not loaded", None: "unknown"}[value]


def apply_module_invariant(
    outcome: str,
    reason: str,
    before: dict[str, bool | None] | None,
    after: dict[str, bool | None] | None,
    evidence: list[str],
    no_access_reason: str = "",
) -> tuple[str, str]:
    """The test's (outcome, reason) once the module states around it are taken into account."""
    if before is None or after is None:
        why = no_access_reason or "lsmod could not be read"
        evidence.append(f"module invariant not checked: {why}")
        if outcome == "passed":
            # Upstream fails a basic SCTP spec whose node check cannot run; here a run
            # without node access is inconclusive, never a pass of the invariant.
            short = "no node access" if why.startswith("no node access") else why
            return "skipped", f"{NOT_CHECKED} ({short}); the test itself: {reason}"
        return outcome, reason

    nodes = list(before)
    evidence.append("sctp.ko before: " + ", ".join(f"{n}={_state(before[n])}" for n in nodes))
    evidence.append("sctp.ko after: " + ", ".join(f"{n}={_state(after.get(n))}" for n in nodes))
    changed = [n for n in nodes if before[n] is False and after.get(n) is True]
    loaded_before = [n for n in nodes if before[n] is True]
    unknown = [n for n in nodes if before[n] is None or after.get(n) is None]
    if unknown and len(unknown) == len(nodes) and outcome == "passed":
        return "error", f"{reason}; {NOT_CHECKED}: lsmod failed on {', '.join(unknown)}"

    if changed and outcome != "skipped":
        detail = f"{CHANGED} (sctp.ko got loaded on {', '.join(changed)})"
        if outcome != "passed":
            detail = f"{detail}; the test itself {outcome}: {reason}"
        return "failed", detail
    if loaded_before:
        return outcome, f"{reason}; {INCONCLUSIVE} (on {', '.join(loaded_before)})"
    if unknown:
        return (
            outcome,
            f"{reason}; module invariant not checked on {', '.join(unknown)}: lsmod failed",
        )
    return outcome, reason
