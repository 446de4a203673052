"""A cluster's recent history as a TestGrid-like grid: tests × runs, pass rate, flakiness, sparklines."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.domain.catalog import ALL_KEYS, Battery, keys_of
from dashboard.domain.ingest.upstream_names import fed_keys
from dashboard.web.views.outcomes import cell

WINDOW = 30  # runs shown and counted: the page costs the same after a year of history
# A trend needs a few points: one or two runs draw a flat line that reads as a verdict.
MIN_TREND_POINTS = 3
# Flakiness is a share of flips between consecutive verdicts: below this many verdicts one flip
# reads as 50 % "flaky", so the page shows how many more it needs instead.
MIN_FLAKY_RUNS = 5
# Verdicts only: a harness error says nothing about SCTP, so it never counts as a flip or a fail.
from kernel.vocabulary import VERDICTS  # noqa: E402


@dataclass
class TestStats:
    decided: int
    passed: int
    flips: int
    skipped: int
    errors: int = 0

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.decided if self.decided else None

    @property
    def flakiness(self) -> float | None:
        # TestGrid's idea: how often consecutive verdicts change between pass and fail.
        return self.flips / (self.decided - 1) if self.decided >= MIN_FLAKY_RUNS else None


def stats(outcomes_oldest_first: Iterable[str]) -> TestStats:
    decided = passed = flips = skipped = errors = 0
    previous: bool | None = None
    for outcome in outcomes_oldest_first:
        if outcome == "skipped":
            skipped += 1
        if outcome == "error":
            errors += 1
        if outcome not in VERDICTS:
            continue
        ok = outcome == "passed"
        decided += 1
        passed += ok
        if previous is not None and ok != previous:
            flips += 1
        previous = ok
    return TestStats(decided, passed, flips, skipped, errors)


def rolling_pass_rate(outcomes_oldest_first: Sequence[str], width: int = 5) -> list[float]:
    decided = [o == "passed" for o in outcomes_oldest_first if o in VERDICTS]
    out = []
    for i in range(len(decided)):
        window = decided[max(0, i - width + 1) : i + 1]
        out.append(sum(window) / len(window))
    return out


def sparkline(values: Sequence[float], width: int = 120, height: int = 24) -> dict[str, Any] | None:
    """Points for an inline SVG polyline; values are 0..1 (1 at the top). None below 3 points."""
    if len(values) < MIN_TREND_POINTS:
        return None
    step = (width - 4) / (len(values) - 1)
    points = " ".join(
        f"{2 + i * step:.1f},{2 + (1 - v) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    last = values[-1]
    return {
        "points": points,
        "width": width,
        "height": height,
        "last_x": f"{2 + (len(values) - 1) * step:.1f}",
        "last_y": f"{2 + (1 - last) * (height - 4):.1f}",
        "last": round(last * 100),
    }


def grid(runs_newest_first: Sequence[Any], results: dict[tuple[int, str], Any]) -> dict[str, Any]:
    """Rows per catalog test; columns are the runs, newest on the left as in TestGrid."""
    rows = []
    per_run_rate: list[float] = []
    for r in reversed(runs_newest_first):
        outs = [results[(r.id, k)].outcome for k in keys_of(r.battery) if (r.id, k) in results]
        decided = [o for o in outs if o in VERDICTS]
        if decided:
            per_run_rate.append(sum(o == "passed" for o in decided) / len(decided))
    for key in ALL_KEYS:
        cells, chronological = [], []
        for r in runs_newest_first:
            res = results.get((r.id, key))
            if key not in keys_of(r.battery):
                cells.append(cell("not_run", run=r.id, reason=f"not in the {r.battery} battery"))
                continue
            if r.battery == Battery.UPSTREAM and key not in fed_keys(r.kubernetes_version):
                # no outcome of upstream's to show: it has no spec for this test (issue 39)
                no_spec = cell("missing", run=r.id, reason="upstream's e2e.test has no spec for it")
                cells.append({**no_spec, "label": "no upstream spec"})
                continue
            if res is None:
                outcome = r.state if r.state in ("queued", "running") else "not_run"
                cells.append(cell(outcome, run=r.id, reason=""))
            else:
                cells.append(cell(res.outcome, run=r.id, reason=res.reason))
                chronological.append(res.outcome)
        chronological.reverse()
        st = stats(chronological)
        rows.append(
            {
                "key": key,
                "cells": cells,
                "stats": st,
                "pass_rate": None if st.pass_rate is None else round(st.pass_rate * 100),
                "flakiness": None if st.flakiness is None else round(st.flakiness * 100),
                "flaky_needs": max(0, MIN_FLAKY_RUNS - st.decided),
                "sparkline": sparkline(rolling_pass_rate(chronological), width=80, height=18),
            }
        )
    return {
        "rows": rows,
        "sparkline": sparkline(per_run_rate, width=240, height=36),
        "points": len(per_run_rate),
    }
