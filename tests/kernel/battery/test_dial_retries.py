"""NetworkingTestConfig's retries as upstream has them: MaxTries = endpoints² + 30 tries,
hitEndpointRetryDelay (2 s) apart, answers accumulating, within an overall bound; the sleep
is injected, so these tests never wait."""

from __future__ import annotations

import dataclasses
from typing import Any

from kernel.battery.base import BatteryReport, ClusterSpec, Timeouts
from kernel.battery.checks._common import upstream_max_tries
from kernel.battery.context import DialResult, RunContext, TestContext
from tests.battery_specs import FAST, spec_for


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _context(
    answers: list[list[str]], dial_seconds: float = 0.5
) -> tuple[TestContext, FakeTime, list[int]]:
    time = FakeTime()
    spec = ClusterSpec(name="c", plugin_slug="calico", timeouts=Timeouts())
    kube: Any = None  # never reached: dial_once is replaced below
    report = BatteryReport("connectivity", "r")
    run = RunContext(kube, spec, "r", report, clock=time.clock, sleep=time.sleep)
    ctx = TestContext(run, "ns")
    tries: list[int] = []

    def dial_once(*args: Any) -> DialResult:
        tries.append(args[4])
        time.now += dial_seconds
        responses = answers.pop(0) if answers else []
        return DialResult(responses, [] if responses else ["i/o timeout"], "dial-x")

    ctx.dial_once = dial_once  # type: ignore[method-assign,assignment]
    return ctx, time, tries


def test_max_tries_is_upstreams_endpoints_squared_plus_thirty():
    assert [upstream_max_tries(n) for n in (1, 2, 3, 10)] == [31, 34, 39, 130]


def test_a_dial_that_never_answers_uses_every_try_two_seconds_apart():
    ctx, time, tries = _context([])
    seen, errors = ctx.dial_expect(
        "10.0.0.1", "10.96.0.9", 95, "sctp", {"a", "b"}, node=None, what="x", max_tries=34
    )
    assert seen == set()
    assert sum(tries) == 34 and set(tries) == {2}  # two exchanges an attempt: 17 attempts
    # 2 s between attempts only, never after the last (slept in 1 s slices: heartbeats)
    assert time.slept == [1.0] * 32
    assert errors == ["i/o timeout"]


def test_answers_accumulate_and_a_late_programmed_service_passes():
    # kube-proxy lag: the first 10 attempts get nothing, then one endpoint, then the other.
    answers = [[]] * 10 + [["a"], ["a", "b"]]
    ctx, _, tries = _context(list(answers))
    seen, _ = ctx.dial_expect(
        "10.0.0.1", "10.96.0.9", 95, "sctp", {"a", "b"}, node=None, what="x", max_tries=34
    )
    assert seen == {"a", "b"}
    assert len(tries) == 12


def test_an_unexpected_answer_ends_the_dial_at_once():
    ctx, _, tries = _context([["intruder"]])
    seen, _ = ctx.dial_expect(
        "10.0.0.1", "10.96.0.9", 95, "sctp", {"a"}, node=None, what="x", max_tries=31
    )
    assert seen == {"intruder"} and tries == [1]


def test_the_overall_bound_stops_a_dial_whose_attempts_are_slow():
    # Each attempt's pod takes 60 s to run: the bound (31 x (2 s + 5 s)) ends it first.
    ctx, _, tries = _context([], dial_seconds=60.0)
    seen, errors = ctx.dial_expect(
        "10.0.0.1", "10.96.0.9", 95, "sctp", {"a"}, node=None, what="x", max_tries=31
    )
    assert seen == set()
    assert len(tries) == 4  # 4 x 62 s > 217 s
    assert errors[-1] == "gave up after 4 of 31 tries: the dial's bound ran out"


def test_slow_endpoint_programming_passes_within_upstreams_retries(start_lab):
    # The lab's kube-proxy writes each Service's rules 1 s after its creation.
    lab = start_lab(faults={"service_programming_delay_s": 1.0})
    spec = spec_for(lab.profile, timeouts=dataclasses.replace(FAST, dial_retry_delay=0.2))
    result = lab.run("connectivity", spec=spec).results["pod-to-service"]
    assert result.outcome == "passed", result.reason
    # The first tries met no rules: the pass came from retrying, as upstream's does.
    assert "hostnames [], 2 error(s)" in result.evidence
