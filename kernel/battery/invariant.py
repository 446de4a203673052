"""The sctp.ko check of the basic tests: upstream's outcome, and our stricter invariant beside it.

KEP-614's Test Plan: "If sctp.ko is not loaded before the test, then it is also not loaded
after the test". Two readings are kept apart:

- **Upstream's outcome** (`upstream_module_verdict`): only "should allow creating a basic SCTP
  service with pod and endpoints" (service.go; at most 2 nodes,
  `GetBoundedReadySchedulableNodes(ctx, cs, 2)`) and "should allow creating a Pod with an SCTP
  HostPort" (networking.go; the pod's one node) call `CheckSCTPModuleLoadedOnNodes`
  (test/e2e/network/util.go): `lsmod | grep sctp` through a hostexec pod, true when any of
  those nodes has it; the spec fails ("The state of the sctp module has changed due to the
  test case") only when none had it before and one has it after. A failing command is only
  logged (read as "not loaded"); a hostexec pod that cannot be created or does not run fails
  the spec (`CreateSync`). The test's outcome follows that, nothing more.
- **Our invariant** (`invariant_fact`): every battery node read before and after every basic
  test. It never changes a test's outcome; it is a fact of the run (fingerprint
  `sctp_invariant`, shown on the run page), and the evidence policy's *conclusive* rule
  (dashboard/domain/policy.py) needs it to hold.
"""

from __future__ import annotations

from typing import Any

CHANGED = "The state of the sctp module has changed due to the test case"
INCONCLUSIVE = "module invariant inconclusive: sctp.ko was already loaded before the test"
NOT_CHECKED = "inconclusive: the sctp.ko invariant could not be checked"
SCOPE = (
    "ours, stricter than upstream: every battery node, before and after each basic test "
    "(upstream reads at most 2 nodes, in 2 specs)"
)

States = dict[str, bool | None]


def _state(value: bool | None) -> str:
    return {True: "loaded", False: "not loaded", None: "unknown"}[value]


def upstream_module_verdict(
    outcome: str,
    reason: str,
    before: States | None,
    after: States | None,
    nodes: list[str],
    evidence: list[str],
    no_access_reason: str = "",
    hostexec_problem: str = "",
) -> tuple[str, str]:
    """The test's (outcome, reason) once upstream's check of `nodes` is taken into account."""
    if hostexec_problem:
        # Upstream's hostexec pod is created with CreateSync: one that cannot run fails it.
        evidence.append(f"upstream's sctp.ko check could not run: {hostexec_problem}")
        detail = f"the hostexec pod of the sctp.ko check did not run: {hostexec_problem}"
        if outcome != "passed":
            detail = f"{detail}; the test itself {outcome}: {reason}"
        return "failed", detail
    if before is None or after is None:
        why = no_access_reason or "lsmod could not be read"
        evidence.append(f"upstream's sctp.ko check not made: {why}")
        if outcome == "passed":
            # A refused hostexec pod fails upstream's spec; here a cluster without node
            # access is inconclusive (domain.md: a refused pod is a skip, never a pass).
            short = "no node access" if why.startswith("no node access") else why
            return "skipped", f"{NOT_CHECKED} ({short}); the test itself: {reason}"
        return outcome, reason
    evidence.append(
        "sctp.ko before (upstream's nodes): "
        + ", ".join(f"{n}={_state(before.get(n))}" for n in nodes)
    )
    evidence.append(
        "sctp.ko after (upstream's nodes): "
        + ", ".join(f"{n}={_state(after.get(n))}" for n in nodes)
    )
    unread = [n for n in nodes if before.get(n) is None or after.get(n) is None]
    if unread:
        evidence.append(
            f"lsmod failed on {', '.join(unread)}: read as not loaded, as upstream's "
            "CheckSCTPModuleLoadedOnNodes does (it only logs)"
        )
    loaded_before = [n for n in nodes if before.get(n) is True]
    loaded_after = [n for n in nodes if after.get(n) is True]
    if not loaded_before and loaded_after and outcome != "skipped":
        detail = f"{CHANGED} (sctp.ko got loaded on {', '.join(loaded_after)})"
        if outcome != "passed":
            detail = f"{detail}; the test itself {outcome}: {reason}"
        return "failed", detail
    if loaded_before:
        return outcome, f"{reason}; {INCONCLUSIVE} (on {', '.join(loaded_before)})"
    return outcome, reason


def invariant_fact(before: States | None, after: States | None, nodes: list[str]) -> dict[str, Any]:
    """Our invariant over `nodes` around one test: held True/False, or None when unchecked."""
    if before is None or after is None:
        return {"held": None, "checked": [], "changed": [], "loaded_before": [], "unread": nodes}
    unread = [n for n in nodes if before.get(n) is None or after.get(n) is None]
    checked = [n for n in nodes if n not in unread]
    changed = [n for n in checked if before[n] is False and after[n] is True]
    return {
        "held": (not changed) if checked else None,
        "checked": checked,
        "changed": changed,
        "loaded_before": [n for n in checked if before[n] is True],
        "unread": unread,
    }


def describe_fact(fact: dict[str, Any]) -> str:
    """One evidence line for the invariant around a test."""
    if fact["held"] is None:
        return f"sctp.ko invariant ({SCOPE}): not checked"
    text = f"sctp.ko invariant ({SCOPE}): "
    if fact["changed"]:
        text += f"did not hold: loaded during the test on {', '.join(fact['changed'])}"
    else:
        text += f"held on {', '.join(fact['checked'])}"
    if fact["loaded_before"]:
        text += f" (already loaded before on {', '.join(fact['loaded_before'])})"
    if fact["unread"]:
        text += f"; lsmod failed on {', '.join(fact['unread'])}"
    return text


def summarize(tests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's invariant: held False when any test broke it, None when none checked it."""
    held = [fact["held"] for fact in tests.values()]
    overall = False if False in held else (True if True in held else None)
    return {"held": overall, "scope": SCOPE, "tests": tests}
