"""netpol-allow-deny reads its long-lived pods' probe logs as upstream's prober polls
(test/e2e/network/netpol/kubemanager.go probeConnectivity): only rounds begun after the pass
began count, a cell is right as soon as one probe shows the expected result, else its last
probe within the window (netpol_poll) decides. Driven by scripted logs and a fake clock."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from kernel.battery.checks.netpol_allow_deny import ALL, P80, Prober
from kernel.battery.pods import connect_target
from tests.battery_specs import FAST

VIPS = {t: f"10.96.0.{i + 10}" for i, t in enumerate(ALL)}


class Logs:
    """Each pod's log as rounds: round n holds {dst: "ok" | "fail TIMEOUT"} for port 80."""

    def __init__(self) -> None:
        self.rounds: dict[str, list[dict[str, str]]] = {t: [] for t in ALL}

    def add_round(self, verdict) -> None:
        for src in ALL:
            self.rounds[src].append({dst: verdict(src, dst) for dst in ALL})

    def text(self, src: str) -> str:
        lines = []
        for n, results in enumerate(self.rounds[src], 1):
            lines.append(f"round {n} start")
            for dst, word in results.items():
                lines.append(f"probe {n} {connect_target(VIPS[dst], P80)} {word}")
            lines.append(f"round {n} done")
        return "\n".join(lines) + "\n"


def _prober(logs: Logs, on_pause=None, poll: float = 10.0):
    clock = SimpleNamespace(now=0.0)

    def pause(seconds: float) -> None:
        clock.now += seconds
        if on_pause is not None:
            on_pause(clock.now)

    timeouts = dataclasses.replace(FAST, netpol_poll=poll, netpol_probe_interval=1.0)
    run = SimpleNamespace(clock=lambda: clock.now, tick=lambda: None, pause=pause)
    ctx: Any = SimpleNamespace(spec=SimpleNamespace(timeouts=timeouts), run=run)
    spaces: Any = {
        letter: SimpleNamespace(
            pod_log=lambda pod, container, tail, letter=letter: logs.text(f"{letter}/{pod}")
        )
        for letter in "xyz"
    }
    return Prober(ctx, spaces, VIPS), clock


def deny_x(src: str, dst: str) -> bool:
    return not dst.startswith("x/")


def test_rounds_begun_before_the_pass_never_count():
    logs = Logs()
    logs.add_round(lambda s, d: "ok")  # before the policy: everything connects
    prober, _ = _prober(
        logs,
        on_pause=lambda now: logs.add_round(lambda s, d: "ok" if deny_x(s, d) else "fail TIMEOUT"),
    )
    seen = prober.observe(deny_x, P80)
    assert all(r.ok == deny_x(s, d) for (s, d), r in seen.items())
    assert seen[("y/a", "x/a")].detail == "timed out (TIMEOUT)"
    assert ("x/a", "x/a") not in seen  # loopback: never a cell


def test_a_cell_is_right_once_a_probe_within_the_window_shows_the_expected_result():
    logs = Logs()

    def enforced(s: str, d: str) -> str:
        return "ok" if deny_x(s, d) else "fail TIMEOUT"

    # the first round after the policy: not effective yet, x still reachable
    rounds = iter([lambda s, d: "ok"])
    prober, clock = _prober(logs, on_pause=lambda now: logs.add_round(next(rounds, enforced)))
    seen = prober.observe(deny_x, P80)
    assert not [c for c, r in seen.items() if r.ok != deny_x(*c)]
    assert seen[("y/a", "x/a")].probes == 2  # the first said "connected", the second decided
    assert clock.now < 10.0  # settled early, as PollImmediate returns at the first match


def test_a_cell_never_right_within_the_window_keeps_its_last_probe():
    logs = Logs()
    prober, clock = _prober(logs, on_pause=lambda now: logs.add_round(lambda s, d: "ok"), poll=3.0)
    seen = prober.observe(deny_x, P80)
    wrong = sorted(c for c, r in seen.items() if r.ok != deny_x(*c))
    assert len(wrong) == 24  # every cell into x from the 8 other pods, loopback left out
    assert all(seen[c].ok and seen[c].detail == "connected" for c in wrong)
    assert 3.0 <= clock.now < 3.0 + FAST.netpol_probe_timeout + 10


def test_a_pod_that_logs_nothing_is_a_wrong_cell_saying_so():
    logs = Logs()

    def only_some(now: float) -> None:
        logs.add_round(lambda s, d: "ok")
        logs.rounds["z/c"] = []  # z/c's prober never ran

    prober, _ = _prober(logs, on_pause=only_some, poll=2.0)
    seen = prober.observe(lambda s, d: True, P80)
    assert seen[("z/c", "x/a")].ok is False
    assert seen[("z/c", "x/a")].detail == "no probe result from z/c within the window"
    assert seen[("y/a", "x/a")].ok is True
