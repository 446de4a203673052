"""Reading every criterion's evidence at once: the criteria name their candidates first, then
one load (three queries) reads them all, instead of one load per criterion."""

from __future__ import annotations

from typing import Any

from dashboard.domain.readiness.criteria import periodic_basic_passing, tests_written
from dashboard.domain.readiness.evidence_lookup import (
    connectivity_sets,
    load,
    plugins_by_id,
    store_of,
)


def prefetch(ctx: Any) -> None:
    """Finds every criterion's candidates first, then reads them all in one load (three
    queries), instead of one load per criterion."""
    if ctx.plain:
        return
    more_runs, more_subs = connectivity_sets(ctx).candidate_ids()  # first: the plugins with it
    runs, subs = tests_written.candidate_ids(ctx, frozenset())
    _schedules, periodic = periodic_basic_passing.candidates(ctx)
    load(
        runs | periodic | more_runs,
        subs | more_subs,
        ctx.memo("plugins", plugins_by_id),
        store_of(ctx),
    )
