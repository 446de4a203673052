"""A list of ids as one query parameter.

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

from django.db.models import F, Lookup


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
