"""Querysets compiled to SQL once per process, run many times.

Django builds and compiles a queryset's SQL anew on every evaluation. For the lookups an
evaluation makes of nested "LIMIT 1" subqueries (tests-written's four per catalog test, the
matrix's eleven per plugin), building and compiling cost more than the database's answer:
about 7 ms of tests-written's 11 ms, 3 of the matrix plugins' 5. Their SQL does not change
between requests except for a few instants (the freshness cutoff), so it is compiled once per
database vendor and shape (`key`: what the SQL depends on besides those instants), with
stand-in instants that each run replaces by its own, adapted as Django adapts them. The rows
go through the same converters as Django's own (an SQLite boolean becomes a bool).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet

# Stand-ins for the instants a query is built with: dates no evidence has (before Kubernetes),
# each distinct, so that each of the compiled parameters is known for which instant it holds.
_STAND_INS = tuple(datetime(1901, 2, 3, 4, 5, 6, 700 + i, tzinfo=UTC) for i in range(4))


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    instants: tuple[tuple[int, int], ...]  # (parameter position, index of the instant)
    fields: tuple[Any, ...]  # the selected expressions, for their converters


_CACHE: dict[tuple[str, Hashable], _Compiled] = {}


def _compile(build: Callable[..., QuerySet[Any]], count: int, using: str) -> _Compiled:
    connection = connections[using]
    qs = build(*_STAND_INS[:count])
    compiler = qs.query.get_compiler(using=using)
    sql, params = compiler.as_sql()
    marks = [connection.ops.adapt_datetimefield_value(s) for s in _STAND_INS[:count]]
    instants = tuple(
        (position, marks.index(p))
        for position, p in enumerate(params)
        if any(type(p) is type(m) and p == m for m in marks)
    )
    fields = tuple(s[0] for s in compiler.select[: compiler.col_count])
    return _Compiled(sql, tuple(params), instants, fields)


def rows(
    key: Hashable,
    build: Callable[..., QuerySet[Any]],
    *instants: datetime,
    using: str = DEFAULT_DB_ALIAS,
) -> list[tuple[Any, ...]]:
    """The rows of `build(*instants)` (a values_list() queryset), as list(build(*instants))
    gives them. `key` names everything the SQL depends on but the instants (a setting, a
    relaxation): two builds with the same key must differ in their instants only."""
    if len(instants) > len(_STAND_INS):
        raise ValueError(f"at most {len(_STAND_INS)} instants")
    connection = connections[using]
    cache_key = (connection.vendor, key)
    compiled = _CACHE.get(cache_key)
    if compiled is None:
        compiled = _CACHE[cache_key] = _compile(build, len(instants), using)
    params = list(compiled.params)
    for position, index in compiled.instants:
        params[position] = connection.ops.adapt_datetimefield_value(instants[index])
    with connection.cursor() as cursor:
        cursor.execute(compiled.sql, params)
        found = cursor.fetchall()
    converters = []
    for position, expression in enumerate(compiled.fields):
        funcs = connection.ops.get_db_converters(expression) + expression.get_db_converters(
            connection
        )
        if funcs:
            converters.append((position, funcs, expression))
    if not converters:
        return [tuple(row) for row in found]
    out = []
    for row in found:
        values = list(row)
        for position, funcs, expression in converters:
            value = values[position]
            for convert in funcs:
                value = convert(value, expression, connection)
            values[position] = value
        out.append(tuple(values))
    return out
