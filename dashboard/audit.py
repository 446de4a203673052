"""The audit trail's hash chain: each entry carries the hash of the one before it.

hash = sha256(prev_hash + canonical JSON of the entry), the entry being its actor, action,
target, detail and time. Changing, inserting or deleting an entry in the middle breaks every
hash after it; `manage.py verify_audit_chain` names the first entry that does not add up.
Entries written before the chain existed (empty hash, before the first hashed one) are legacy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

# Any constant: the key of the PostgreSQL advisory lock that serializes appends to the chain.
_PG_LOCK_KEY = 614_0001


def canonical(actor: str, action: str, target: str, detail: Any, created: datetime) -> str:
    entry = {
        "actor": actor,
        "action": action,
        "target": target,
        "detail": detail,
        "created": created.astimezone(UTC).isoformat(timespec="microseconds"),
    }
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(
    prev_hash: str, actor: str, action: str, target: str, detail: Any, created: datetime
) -> str:
    return hashlib.sha256(
        (prev_hash + canonical(actor, action, target, detail, created)).encode()
    ).hexdigest()


def json_native(detail: dict[str, Any]) -> dict[str, Any]:
    """What the JSONField will give back (tuples become lists, keys strings): the hash is over that."""
    return json.loads(json.dumps(detail, default=str))


def lock_chain() -> None:
    """Serialize appenders until the surrounding transaction ends, so two entries never share a
    prev_hash. PostgreSQL: an advisory lock (works on an empty table too). SQLite: a no-op write
    takes the database's write lock now rather than at the INSERT, after the last row was read."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_PG_LOCK_KEY])
        elif connection.vendor == "sqlite":
            cursor.execute(
                "UPDATE dashboard_auditevent SET id = id WHERE id = (SELECT MAX(id) FROM dashboard_auditevent)"
            )


def append(
    model: Any, actor: str, action: str, target: str, detail: dict[str, Any], created: datetime
) -> Any:
    detail = json_native(detail)
    with transaction.atomic():
        lock_chain()
        last = model.objects.order_by("-id").select_for_update().only("id", "hash").first()
        prev = last.hash if last is not None else ""
        return model.objects.create(
            actor=actor,
            action=action,
            target=target,
            detail=detail,
            created=created,
            prev_hash=prev,
            hash=entry_hash(prev, actor, action, target, detail, created),
        )


@dataclass
class ChainReport:
    checked: int
    legacy: int
    broken_id: int | None = None
    problem: str = ""


def verify(entries: Iterable[Any]) -> ChainReport:
    """Walks the entries oldest first (by id); stops at the first that does not add up."""
    checked = legacy = 0
    prev: str | None = None  # None: the chain has not started yet
    prev_id: int | None = None
    for e in entries:
        if prev is None and not e.hash:
            legacy += 1
            continue
        expected_prev = prev or ""
        if e.prev_hash != expected_prev:
            where = f"entry {prev_id}" if prev_id else "the start of the chain"
            return ChainReport(
                checked,
                legacy,
                e.id,
                f"its prev_hash does not match the hash of {where} "
                "(an entry was changed, removed or inserted before it)",
            )
        if e.hash != entry_hash(e.prev_hash, e.actor, e.action, e.target, e.detail, e.created):
            return ChainReport(
                checked, legacy, e.id, "its hash does not match its content (the entry was changed)"
            )
        checked += 1
        prev, prev_id = e.hash, e.id
    return ChainReport(checked, legacy)
