"""AnyOf: a list of ids as one query parameter, the same rows as `id__in` on both databases."""

from __future__ import annotations

import pytest

from dashboard.domain.lookups import any_of
from dashboard.domain.models import Run, TestResult
from tests import factories as f

pytestmark = pytest.mark.django_db


def test_any_of_finds_the_rows_id_in_finds_with_one_parameter():
    c = f.cluster()
    runs = [f.run(c) for _ in range(4)]
    ids = [runs[0].id, runs[2].id, runs[2].id, 10**12]  # a repeat and an id that is not there
    found = sorted(Run.objects.filter(any_of("id", ids)).values_list("id", flat=True))
    assert found == sorted(Run.objects.filter(id__in=ids).values_list("id", flat=True))
    assert found == [runs[0].id, runs[2].id]


def test_any_of_on_a_foreign_key_and_with_no_ids():
    c = f.cluster()
    run = f.run(c)
    other = f.run(c)
    rows = TestResult.objects.filter(any_of("run_id", [run.id]))
    assert rows.count() == run.results.count() > 0
    assert set(rows.values_list("run_id", flat=True)) == {run.id} != {other.id}
    assert list(Run.objects.filter(any_of("id", []))) == []


def test_the_statement_is_the_same_whatever_the_count():
    compiled = []
    for n in (1, 500):
        qs = Run.objects.filter(any_of("id", range(10**9, 10**9 + n)))
        compiled.append(qs.query.get_compiler(using="default").as_sql())
    (one_sql, one_params), (many_sql, many_params) = compiled
    # the ids travel as one parameter: one statement text whatever their count
    assert one_sql == many_sql and len(one_params) == len(many_params) == 1
    assert Run.objects.filter(any_of("id", range(10**9, 10**9 + 500))).count() == 0


@pytest.mark.parametrize("old_sqlite", [False, True])
def test_json_key_reads_a_key_as_the_decoded_document_does(monkeypatch, old_sqlite):
    from django.db import connection

    from dashboard.domain.lookups import JSONKey

    if old_sqlite:
        if connection.vendor != "sqlite":
            pytest.skip("SQLite before 3.38 (no ->) only")
        monkeypatch.setattr(connection.Database, "sqlite_version_info", (3, 37, 2))
    c = f.cluster()
    run = f.run(c)
    values = ["false", "0", "", "ipvs", 0, 1, True, False, None, [], ["a"], {"n": False}, {}]
    for value in [*values, "absent"]:
        document = {"other": "x"} if value == "absent" else {"k": value, "other": "x"}
        Run.objects.filter(pk=run.pk).update(fingerprint=document)
        got = Run.objects.annotate(v=JSONKey("fingerprint", "k")).get(pk=run.pk).v
        expected = document.get("k")
        if old_sqlite and isinstance(expected, bool):
            assert got == int(expected)  # json_extract gives SQLite's 1 and 0: the same truth
        else:
            assert got == expected and type(got) is type(expected), (value, got)
