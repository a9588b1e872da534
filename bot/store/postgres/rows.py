"""The SQL and row helpers of the PostgreSQL store: audit rows and their commit-order lock, question reads, filters,
and records as they are stored (in their camelCase wire form, as the SQLite store keeps them)."""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any, LiteralString, get_args

from psycopg import AsyncConnection, AsyncCursor, sql

from bot.store.chain import ChainRow
from bot.store.errors import StoreError
from bot.store.postgres.schema import keep, keep_optional, restore_optional
from bot.store.records import AuditEvent, AuditKind, QuestionRecord, utc_now

_AUDIT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))


def record_json(record: QuestionRecord) -> str:
    # by_alias: the questions and answers inside are kept in their camelCase wire form, as the SQLite store does.
    return record.model_dump_json(by_alias=True, exclude_none=True)


APPEND_AUDIT: LiteralString = (
    # The lock is taken in the INSERT itself, before the row (and its seq and hash) is made: one round trip fewer
    # held. The row is chained as a grouped statement's are (`groups.CHAINED_INSERT`), as one of one.
    "WITH locked AS MATERIALIZED (SELECT pg_advisory_xact_lock(%s, %s)::text AS nothing) "
    "INSERT INTO audit (seq, at, question_id, kind, channel, actor, detail_json, prev, hash) OVERRIDING SYSTEM VALUE "
    "SELECT c.seq, c.at, c.question_id, c.kind, c.channel, c.actor, c.detail_json, c.prev, c.hash FROM locked l "
    "CROSS JOIN LATERAL handraise_audit_chained(ARRAY[%s::timestamptz], ARRAY[%s::text], ARRAY[%s::text], "
    "ARRAY[%s::text], ARRAY[%s::text], ARRAY[%s::text || l.nothing]) c RETURNING seq, prev, hash"
)


def check_kind(kind: str) -> None:
    if kind not in _AUDIT_KINDS:
        raise ValueError(f"unknown audit kind {kind!r}")


def audit_row(
    question_id: str | None, kind: AuditKind, channel: str | None, actor: str | None, detail: dict[str, Any]
) -> tuple[Any, ...]:
    """An audit row but its seq, as stored (and as a later read returns it)."""
    check_kind(kind)
    return (
        utc_now(),
        keep_optional(question_id),
        kind,
        keep_optional(channel),
        keep_optional(actor),
        json.dumps(detail),
    )


def conditions(*filters: tuple[LiteralString, Any]) -> tuple[sql.Composable, list[Any]]:
    """AND together the `(sql, param)` filters whose parameter is not None (None means "any")."""
    active: list[tuple[LiteralString, Any]] = [(clause, param) for clause, param in filters if param is not None]
    # A tuple is the parameters of a clause that takes several.
    return sql.SQL(" AND ").join([sql.SQL("TRUE"), *(sql.SQL(clause) for clause, _ in active)]), [
        value for _, param in active for value in (param if isinstance(param, tuple) else (param,))
    ]


async def fetch_question(
    db: AsyncConnection[Any] | AsyncCursor[Any], id: str, *, lock: bool = False
) -> QuestionRecord | None:
    query: LiteralString = "SELECT record_json FROM questions WHERE id = %s"
    cursor = await db.execute(query + " FOR NO KEY UPDATE" if lock else query, (keep(id),))
    row = await cursor.fetchone()
    return None if row is None else QuestionRecord.model_validate_json(row[0])


async def require_question(db: AsyncCursor[Any], id: str, *, lock: bool = False) -> QuestionRecord:
    record = await fetch_question(db, id, lock=lock)
    if record is None:
        raise StoreError(f"no question {id} in the store")
    return record


async def read_question(db: AsyncConnection[Any], id: str) -> tuple[QuestionRecord, str]:
    """The question and its record as stored, without a lock (for a compare-and-swap). Raises StoreError."""
    cursor = await db.execute("SELECT record_json FROM questions WHERE id = %s", (keep(id),))
    row = await cursor.fetchone()
    if row is None:
        raise StoreError(f"no question {id} in the store")
    return QuestionRecord.model_validate_json(row[0]), row[0]


async def write_record(db: AsyncCursor[Any], record: QuestionRecord) -> None:
    await db.execute("UPDATE questions SET record_json = %s WHERE id = %s", (record_json(record), keep(record.id)))


def event_from_row(row: tuple[Any, ...]) -> AuditEvent:
    seq, at, question_id, kind, channel, actor, detail, prev, digest = row
    return AuditEvent(
        seq=seq,
        at=at,
        question_id=restore_optional(question_id),
        kind=kind,
        channel=restore_optional(channel),
        actor=restore_optional(actor),
        detail=json.loads(detail),
        prev=prev,
        hash=digest,
    )


def chain_row(row: tuple[Any, ...]) -> ChainRow:
    """A row of `SELECT seq, at, …, prev, hash` as stored: `at` in the text the chain's hash covers."""
    seq, at, *rest = row
    return ChainRow(seq, at.astimezone(UTC).isoformat(timespec="microseconds"), *rest)
