"""The sctp.ko check of a basic test: upstream's outcome over its nodes, our invariant beside it."""

from __future__ import annotations

from kernel.battery.invariant import (
    describe_fact,
    invariant_fact,
    summarize,
    upstream_module_verdict,
)

NOT_LOADED = {"n1": False, "n2": False}


def apply(outcome, before, after, reason="it worked", nodes=("n1", "n2"), problem=""):
    evidence: list[str] = []
    result = upstream_module_verdict(
        outcome, reason, before, after, list(nodes), evidence, "no node access: 403", problem
    )
    return result, evidence


def test_an_unchanged_unloaded_module_keeps_the_verdict():
    (outcome, reason), evidence = apply("passed", NOT_LOADED, NOT_LOADED)
    assert (outcome, reason) == ("passed", "it worked")
    assert evidence == [
        "sctp.ko before (upstream's nodes): n1=not loaded, n2=not loaded",
        "sctp.ko after (upstream's nodes): n1=not loaded, n2=not loaded",
    ]


def test_a_module_loaded_during_the_test_fails_it_and_names_the_node():
    (outcome, reason), _ = apply("passed", NOT_LOADED, {"n1": False, "n2": True})
    assert outcome == "failed"
    assert (
        reason
        == "The state of the sctp module has changed due to the test case (sctp.ko got loaded on n2)"
    )


def test_a_module_loaded_on_a_node_upstream_does_not_read_leaves_upstreams_outcome():
    # Upstream reads only its nodes: loaded on n3 passes there; our invariant says otherwise.
    before, after = {**NOT_LOADED, "n3": False}, {**NOT_LOADED, "n3": True}
    assert apply("passed", before, after)[0] == ("passed", "it worked")
    fact = invariant_fact(before, after, ["n1", "n2", "n3"])
    assert fact["held"] is False and fact["changed"] == ["n3"]
    assert describe_fact(fact).endswith("did not hold: loaded during the test on n3")
    assert summarize({"declare-sctp-ports": fact})["held"] is False


def test_a_failing_test_that_also_loaded_the_module_reports_both():
    (outcome, reason), _ = apply("failed", NOT_LOADED, {"n1": True, "n2": True}, "TCP got through")
    assert outcome == "failed"
    assert reason.endswith("; the test itself failed: TCP got through")


def test_a_module_loaded_before_is_said_and_upstreams_verdict_stands():
    (outcome, reason), _ = apply("passed", {"n1": True, "n2": False}, {"n1": True, "n2": True})
    assert outcome == "passed"  # upstream: loaded at start, so no change to report
    assert reason == (
        "it worked; module invariant inconclusive: sctp.ko was already loaded before the test (on n1)"
    )


def test_without_node_access_the_run_is_inconclusive_never_a_pass():
    (outcome, reason), evidence = apply("passed", None, None)
    assert outcome == "skipped"
    assert reason == (
        "inconclusive: the sctp.ko invariant could not be checked (no node access); "
        "the test itself: it worked"
    )
    assert evidence == ["upstream's sctp.ko check not made: no node access: 403"]
    assert apply("failed", None, None)[0] == ("failed", "it worked")
    assert invariant_fact(None, None, ["n1"])["held"] is None


def test_a_failing_lsmod_only_logs_as_upstream():
    (outcome, reason), evidence = apply(
        "passed", {"n1": None, "n2": None}, {"n1": None, "n2": None}
    )
    assert (outcome, reason) == ("passed", "it worked")
    assert evidence[-1] == (
        "lsmod failed on n1, n2: read as not loaded, as upstream's CheckSCTPModuleLoadedOnNodes "
        "does (it only logs)"
    )
    fact = invariant_fact({"n1": None}, {"n1": None}, ["n1"])
    assert fact["held"] is None and fact["unread"] == ["n1"]


def test_a_hostexec_pod_that_does_not_run_fails_as_upstreams_createsync():
    (outcome, reason), _ = apply("passed", None, None, problem="pod hostexec-n1-3 stayed Pending")
    assert outcome == "failed"
    assert reason == (
        "the hostexec pod of the sctp.ko check did not run: pod hostexec-n1-3 stayed Pending"
    )
