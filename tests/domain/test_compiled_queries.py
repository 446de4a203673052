"""dashboard.domain.compiled: a queryset compiled once answers as the queryset does, whatever
instants each run gives it, on either database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import now

from dashboard.domain import compiled
from dashboard.domain.catalog import ALL_KEYS, Outcome
from dashboard.domain.models import Cluster, Run
from dashboard.domain.policy import AGE, RELEASE, TRUST, Policy
from dashboard.domain.readiness.criteria import tests_written
from tests import factories as f

pytestmark = pytest.mark.django_db


def _history() -> None:
    f.plugin("calico")
    for i, days in enumerate([0.5, 3, 12, 40, 95, 200]):
        c = f.cluster(plugin_slug="calico", approved=i % 3 != 0, emulated=i == 4)
        outcomes = dict.fromkeys(ALL_KEYS, Outcome.PASSED)
        outcomes[ALL_KEYS[i % len(ALL_KEYS)]] = Outcome.FAILED
        f.run(c, outcomes, days_ago=days)
        f.run(c, dict.fromkeys(ALL_KEYS, Outcome.SKIPPED), days_ago=days + 1)


def _runs(since, until):
    return (
        Run.objects.filter(finished__gte=since, created__lte=until)
        .order_by("-finished", "-id")
        .values_list("id", "emulated", "finished", "cluster__approved", "kubernetes_minor")
    )


def test_each_run_answers_with_its_own_instants_as_the_queryset_does() -> None:
    _history()
    at = now()
    pairs = [(at - timedelta(days=d), at - timedelta(days=u)) for d, u in [(1, 0), (50, 2)]]
    pairs += [(at - timedelta(days=400), at), (at + timedelta(days=1), at)]
    for since, until in pairs:
        expected = list(_runs(since, until))
        assert compiled.rows(("runs-between", "test"), _runs, since, until) == expected
    # the converters Django applies: booleans are bools and instants aware on both databases
    found = compiled.rows(("runs-between", "test"), _runs, at - timedelta(days=400), at)
    assert found and all(type(r[1]) is bool and type(r[3]) is bool for r in found)
    assert all(r[2].tzinfo is not None for r in found)


def test_a_compiled_query_is_one_query_and_its_sql_is_built_once() -> None:
    _history()
    built = []

    def build(since):
        built.append(since)
        return Cluster.objects.filter(created__gte=since).values_list("name")

    for days in (1, 2, 3):
        with CaptureQueriesContext(connection) as queries:
            compiled.rows(("clusters-since", "test"), build, now() - timedelta(days=days))
        assert len(queries) == 1
    assert len(built) == 1


def test_too_many_instants_are_refused() -> None:
    with pytest.raises(ValueError):
        compiled.rows(("many", "test"), lambda *a: Run.objects.values_list("id"), *[now()] * 5)


@pytest.mark.parametrize("relax", [frozenset(), frozenset({AGE}), frozenset({TRUST, RELEASE})])
def test_tests_written_candidates_are_the_querysets_at_every_cutoff(relax) -> None:
    _history()
    for days_ago in (0, 30, 100, 300):
        pol = Policy(now=now() - timedelta(days=days_ago))
        expected = list(tests_written._candidate_runs(pol, relax))
        found = tests_written.candidate_run_rows(pol, relax)
        assert found == expected
        assert any(any(row[1:]) for row in found)
