"""The sctp.ko invariant applied to a basic test's verdict."""

from __future__ import annotations

from kernel.battery.invariant import apply_module_invariant

NOT_LOADED = {"n1": False, "n2": False}


def apply(outcome, before, after, reason="it worked"):
    evidence: list[str] = []
    result = apply_module_invariant(outcome, reason, before, after, evidence, "no node access: 403")
    return result, evidence


def test_an_unchanged_unloaded_module_keeps_the_verdict():
    (outcome, reason), evidence = apply("passed", NOT_LOADED, NOT_LOADED)
    assert (outcome, reason) == ("passed", "it worked")
    assert evidence == [
        "sctp.ko before: n1=not loaded, n2=not loaded",
        "sctp.ko after: n1=not loaded, n2=not loaded",
    ]


def test_a_module_loaded_during_the_test_fails_it_and_names_the_node():
    (outcome, reason), _ = apply("passed", NOT_LOADED, {"n1": False, "n2": True})
    assert outcome == "failed"
    assert (
        reason
        == "The state of the sctp module has changed due to the test case (sctp.ko got loaded on n2)"
    )


def test_a_failing_test_that_also_loaded_the_module_reports_both():
    (outcome, reason), _ = apply("failed", NOT_LOADED, {"n1": True, "n2": True}, "TCP got through")
    assert outcome == "failed"
    assert reason.endswith("; the test itself failed: TCP got through")


def test_a_module_loaded_before_makes_it_inconclusive():
    (outcome, reason), _ = apply("passed", {"n1": True, "n2": False}, {"n1": True, "n2": False})
    assert outcome == "passed"
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
    assert evidence == ["module invariant not checked: no node access: 403"]
    # a failure stays a failure
    assert apply("failed", None, None)[0] == ("failed", "it worked")


def test_lsmod_unreadable_on_every_node_is_no_pass():
    (outcome, reason), _ = apply("passed", {"n1": None, "n2": None}, NOT_LOADED)
    assert outcome == "error" and "could not be checked" in reason


def test_an_unreadable_lsmod_is_said_not_hidden():
    (_, reason), _ = apply("passed", {"n1": False, "n2": None}, NOT_LOADED)
    assert reason == "it worked; module invariant not checked on n2: lsmod failed"
