"""A list of ids as one query parameter; one key of a JSON column, read by the database.

`filter(id__in=ids)` spells one placeholder per id: with the hundreds of runs an evaluation
reads, Django prepares every id on its own and psycopg parses a query of hundreds of
placeholders, which cost more than the query itself (about 14 ms of a 600-id read, against
4 ms for the database). `AnyOf(F("id"), ids)` sends the list as one array (PostgreSQL:
`= ANY(%s::bigint[])`) or one JSON text (SQLite: `IN (SELECT value FROM json_each(%s))`), so
the statement has one placeholder whatever the count.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db.models import F, Func, JSONField, Lookup


class AnyOf(Lookup):
    """`AnyOf(F("run_id"), ids)`: the column is one of these integer ids (a filter expression)."""

    prepare_rhs = False  # the ids stay one list: no per-id preparation

    def __init__(self, lhs: Any, ids: Iterable[int]) -> None:
        super().__init__(lhs, sorted({int(i) for i in ids}))

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, params = compiler.compile(self.lhs)
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s::bigint[])", [*params, self.rhs]
        return f"{lhs} IN (SELECT value FROM json_each(%s))", [*params, json.dumps(self.rhs)]


def any_of(field: str, ids: Iterable[int]) -> AnyOf:
    return AnyOf(F(field), ids)


class JSONKey(Func):
    """`JSONKey("fingerprint", "emulated")`: one top-level key of a JSON column as JSON (the
    value exactly as `.get(key)` on the decoded document gives it; NULL, read as None, when the
    key is absent or the column is not an object), so that a query reads a few keys of a large
    document instead of sending and decoding all of it.

    Both databases' `->` answer JSON: a string stays a string, `true` a boolean (Django's
    KeyTransform gives SQLite's SQL values instead, so the string "false" would read as False).
    SQLite before 3.38 has no `->`: there `json_quote(json_extract(...))`, which gives `true`
    and `false` as 1 and 0 (the same truth) and everything else as JSON."""

    output_field = JSONField()

    def __init__(self, field: str, key: str) -> None:
        super().__init__(F(field))
        self.key = key

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:  # type: ignore[override]
        lhs, params = compiler.compile(self.source_expressions[0])
        if connection.vendor == "sqlite" and connection.Database.sqlite_version_info < (3, 38):
            return f"json_quote(json_extract({lhs}, %s))", [*params, "$." + json.dumps(self.key)]
        return f"({lhs} -> %s)", [*params, self.key]
