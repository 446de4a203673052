"""The audit trail's keyed, numbered hash chain, anchored outside the database.

Each entry has a number (`seq`: 1, 2, 3, … with no gaps) and
hash = HMAC-SHA256(AUDIT_CHAIN_KEY, prev_hash + canonical JSON of the entry), the entry being
its number, actor, action, target, detail and time. The key lives in the settings (the
environment, a file), never in the database: someone with a copy of the database can change an
entry but cannot compute the hashes that would make the change add up. A gap in the numbers
shows a deleted entry, an empty hash a blanked one.

Deleting the newest entries leaves a shorter chain that adds up; the head is therefore also kept
outside the database. Every sign-off and every KEP report quotes the head (entry number and
hash), and a periodic checkpoint (`workers.tasks.audit_checkpoint`) writes it to the log, to
every enabled webhook and to AUDIT_CHECKPOINT_FILE. `manage.py verify_audit_chain` checks the
chain and that every checkpoint it knows of (the file, `--checkpoint SEQ:HASH`) is still in it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction

from dashboard.domain import notify

log = logging.getLogger(__name__)

# Any constant: the key of the PostgreSQL advisory lock that serializes appends to the chain.
_PG_LOCK_KEY = 614_0001


def chain_key() -> bytes:
    """AUDIT_CHAIN_KEY, or one derived from SECRET_KEY (both outside the database)."""
    key = (getattr(settings, "AUDIT_CHAIN_KEY", "") or "").strip()
    if key:
        return key.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"sctp-dashboard audit chain", "sha256").digest()


def canonical(
    seq: int | None, actor: str, action: str, target: str, detail: Any, created: datetime
) -> str:
    entry = {
        "seq": seq,
        "actor": actor,
        "action": action,
        "target": target,
        "detail": detail,
        "created": created.astimezone(UTC).isoformat(timespec="microseconds"),
    }
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(
    prev_hash: str,
    seq: int | None,
    actor: str,
    action: str,
    target: str,
    detail: Any,
    created: datetime,
    *,
    key: bytes | None = None,
) -> str:
    message = (prev_hash + canonical(seq, actor, action, target, detail, created)).encode()
    return hmac.new(key or chain_key(), message, hashlib.sha256).hexdigest()


def json_native(detail: dict[str, Any]) -> dict[str, Any]:
    """What the JSONField will give back (tuples become lists, keys strings): the hash is over that."""
    native: dict[str, Any] = json.loads(json.dumps(detail, default=str))
    return native


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
        last = model.objects.order_by("-id").select_for_update().only("id", "seq", "hash").first()
        prev = last.hash if last is not None else ""
        seq = (last.seq or 0) + 1 if last is not None else 1
        return model.objects.create(
            seq=seq,
            actor=actor,
            action=action,
            target=target,
            detail=detail,
            created=created,
            prev_hash=prev,
            hash=entry_hash(prev, seq, actor, action, target, detail, created),
        )


@dataclass(frozen=True)
class Head:
    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> Head:
        seq, sep, digest = text.strip().partition(":")
        if not sep or not seq.isdigit() or len(digest) != 64:
            raise ValueError(f"a checkpoint is SEQ:HASH (64 hex digits), not {text!r}")
        return cls(int(seq), digest.lower())


def head(model: Any = None) -> Head | None:
    """The newest entry's number and hash: what sign-offs, reports and checkpoints quote."""
    if model is None:
        model = apps.get_model("dashboard", "AuditEvent")  # by name: the model records through here
    last = model.objects.order_by("-id").only("seq", "hash").first()
    if last is None or last.seq is None:
        return None
    return Head(last.seq, last.hash)


@dataclass
class ChainReport:
    checked: int
    legacy: int = 0
    broken_id: int | None = None
    problem: str = ""
    head: Head | None = None
    checkpoints: int = 0
    hashes: dict[int, str] = field(default_factory=dict, repr=False)


def verify(entries: Iterable[Any], checkpoints: Iterable[Head] = ()) -> ChainReport:
    """Walks the entries oldest first (by id); stops at the first that does not add up. Then every
    checkpoint must still be in the chain: the same number with the same hash."""
    key = chain_key()
    checked = 0
    prev, prev_id, expected_seq = "", None, 1
    seen: dict[int, str] = {}
    for e in entries:
        where = f"entry {prev_id}" if prev_id else "the start of the chain"
        if e.seq != expected_seq:
            what = (
                f"entries {expected_seq}…{e.seq - 1} are missing (deleted)"
                if isinstance(e.seq, int) and e.seq > expected_seq
                else f"its number is {e.seq}, expected {expected_seq} (renumbered or inserted)"
            )
            return ChainReport(checked, broken_id=e.id, problem=what)
        if not e.hash:
            return ChainReport(checked, broken_id=e.id, problem="its hash is blank (erased)")
        if e.prev_hash != prev:
            return ChainReport(
                checked,
                broken_id=e.id,
                problem=f"its prev_hash does not match the hash of {where} "
                "(an entry was changed, removed or inserted before it)",
            )
        try:
            expected = entry_hash(
                e.prev_hash, e.seq, e.actor, e.action, e.target, e.detail, e.created, key=key
            )
        except (TypeError, ValueError, AttributeError) as exc:
            return ChainReport(
                checked, broken_id=e.id, problem=f"its content is unreadable ({exc})"
            )
        if not hmac.compare_digest(e.hash, expected):
            return ChainReport(
                checked,
                broken_id=e.id,
                problem="its hash does not match its content under this deployment's key "
                "(the entry was changed, or its hash recomputed without the key)",
            )
        checked += 1
        seen[e.seq] = e.hash
        prev, prev_id, expected_seq = e.hash, e.id, e.seq + 1
    report = ChainReport(checked, head=Head(expected_seq - 1, prev) if checked else None)
    for point in checkpoints:
        report.checkpoints += 1
        if point.seq not in seen:
            report.problem = (
                f"checkpoint {point.seq} is not in the chain, which ends at entry "
                f"{expected_seq - 1}: the newest entries were deleted"
            )
            return report
        if not hmac.compare_digest(seen[point.seq], point.hash):
            report.problem = (
                f"entry {point.seq} no longer has the hash its checkpoint recorded "
                f"({point.hash[:12]}…): the chain was rewritten from there on"
            )
            return report
    return report


def checkpoint_file() -> Path | None:
    path = getattr(settings, "AUDIT_CHECKPOINT_FILE", "")
    return Path(path) if path else None


def recorded_checkpoints() -> list[Head]:
    """The heads written to AUDIT_CHECKPOINT_FILE (one JSON object a line), oldest first."""
    path = checkpoint_file()
    if path is None or not path.exists():
        return []
    points = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            points.append(Head(int(data["seq"]), str(data["hash"])))
        except (ValueError, KeyError, TypeError):
            log.warning("%s line %d is not a checkpoint; ignored", path, number)
    return points


def write_checkpoint(at: datetime) -> Head | None:
    """Logs the head and appends it to AUDIT_CHECKPOINT_FILE; the caller sends it on."""
    current = head()
    if current is None:
        return None
    log.info("audit checkpoint: entry %d hash %s", current.seq, current.hash)
    path = checkpoint_file()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(
                json.dumps({"at": at.isoformat(), "seq": current.seq, "hash": current.hash}) + "\n"
            )
    return current


def checkpoint(at: datetime) -> Head | None:
    """The periodic checkpoint (beat: workers.tasks.audit_checkpoint): the head goes to the log,
    to AUDIT_CHECKPOINT_FILE and to every enabled notification channel (webhooks), once per head."""

    previous = recorded_checkpoints()
    current = head()
    if current is None:
        return None
    if previous and previous[-1] == current:
        log.info("audit checkpoint: entry %d hash %s (unchanged)", current.seq, current.hash)
        return current
    write_checkpoint(at)
    notify.emit(
        f"audit-checkpoint:{current.seq}:{current.hash[:16]}",
        "audit.checkpoint",
        {
            "seq": current.seq,
            "hash": current.hash,
            "at": at.isoformat(),
            "detail": (
                f"Audit trail head: entry {current.seq}, hash {current.hash}. Keep it: "
                f"`manage.py verify_audit_chain --checkpoint {current}` shows any later rewrite "
                "or deletion of the trail up to it."
            ),
        },
    )
    return current
