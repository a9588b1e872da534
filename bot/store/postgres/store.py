"""The store on PostgreSQL, for several `handraise serve` replicas sharing one database.

The contracts are those of the SQLite store (`bot.store.sqlite.store.Store`), checked by the same tests. Round trips are
what a call costs (each about as much CPU here as in PostgreSQL), so most calls are one statement on an autocommit
connection, one implicit transaction, their audit event included (a data-modifying CTE): an ask, a delivery, an
audit event; the foreign keys and unique constraints speak for the checks a transaction would have made by reading
first. Changes to a question's record (resolve, partial answers, approvals) are a compare-and-swap: a conditional
`UPDATE … WHERE status = 'pending'` that also requires the stored record to be the one the change was made from,
so the first resolution wins and nothing written since is lost; a caller's current copy (`resolve(seen=…)`) makes
it one round trip. Under load, concurrent asks, deliveries and swaps are made in groups, one statement and one
commit for many (`bot.store.postgres.groups`). A reminder, which changes two rows from what it reads, locks its row
(`FOR NO KEY UPDATE`, which leaves the audit log's foreign-key checks free to run) in a transaction.
Connections (a pool that replaces broken ones; StoreUnavailable while the server is away) are
`bot.store.postgres.pool`'s, the SQL and row helpers `bot.store.postgres.rows`'.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString, cast

import psycopg
from psycopg import AsyncConnection, AsyncCursor, sql

from bot.store.chain import ChainRow
from bot.store.errors import StoreError, key_taken
from bot.store.postgres import kept
from bot.store.postgres.groups import (
    ADD_DELIVERIES,
    CREATE_QUESTIONS,
    FIND_REPLIES,
    SWAP_RECORDS,
    Grouped,
    SplitGroup,
    split_on,
)
from bot.store.postgres.learned import delete_learned, insert_learned, select_learned
from bot.store.postgres.pool import PostgresConnections
from bot.store.postgres.rows import (
    APPEND_AUDIT,
    audit_row,
    chain_row,
    check_kind,
    conditions,
    event_from_row,
    fetch_question,
    read_question,
    record_json,
    require_question,
    write_record,
)
from bot.store.postgres.schema import (
    AUDIT_LOCK,
    keep,
    keep_optional,
    restore,
)
from bot.store.postgres.webhooks import claim, finish, queue_one, with_webhooks
from bot.store.records import (
    REMIND_AT_KEY,
    REMINDED_KEY,
    SEEN_EVENTS_KEPT,
    Approval,
    AuditEvent,
    AuditKind,
    Delivery,
    LearnedRule,
    NewDelivery,
    PushSubscription,
    QuestionRecord,
    QuestionStatus,
    Resolution,
    asked_detail,
    key_detail,
    utc_now,
)
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, WebhookTarget, queued_for
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem

CREATE_QUESTIONS_HOOKED = with_webhooks(CREATE_QUESTIONS, "'asked'")
SWAP_RECORDS_HOOKED = with_webhooks(SWAP_RECORDS, "g.kind")


def _columns(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]] | None:
    """(URLs, events) as the two arrays a hooked statement takes; None for none."""
    return ([url for url, _ in pairs], [event for _, event in pairs]) if pairs else None


class PostgresStore(PostgresConnections):
    """The handraise store on PostgreSQL. Open with `await PostgresStore.open(url)`; share one per process."""

    owner: str | None = None
    """The replica that owns the questions this store creates (`bot.replicas.postgres` sets it); None: no owner yet, so
    the first replica to look claims them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Use `open` (`PostgresConnections.open`)."""
        super().__init__(*args, **kwargs)
        self._grouped_creates = Grouped(self._create_questions, key=lambda row: row[0])
        self._grouped_deliveries = Grouped(self._add_deliveries, key=lambda row: (row[0], row[1]))
        self._grouped_swaps = Grouped(self._swap_records, key=lambda row: row[0])
        self._grouped_replies = Grouped(self._find_replies, key=lambda row: row, reads=True)

    webhooks: tuple[WebhookTarget, ...] = ()
    _asked_hooks: tuple[list[str], list[str]] | None = None
    _resolved_hooks: tuple[list[str], list[str]] | None = None

    def subscribe_webhooks(self, targets: Sequence[WebhookTarget]) -> None:
        self.webhooks = tuple(targets)
        asked = [(target.url, "asked") for target in targets if "asked" in target.events]
        resolved = [(target.url, event) for target in targets for event in target.events if event != "asked"]
        self._asked_hooks = _columns(asked)
        self._resolved_hooks = _columns(resolved)

    async def claim_webhooks(self, urls: Sequence[str], *, lease_seconds: float, limit: int) -> list[WebhookDelivery]:
        if not urls:
            return []
        async with self._connection() as db:
            return await claim(db, urls, lease_seconds, limit)

    async def finish_webhook(
        self, id: str, attempt: int, outcome: WebhookOutcome, *, retry_in: float | None = None, error: str | None = None
    ) -> bool:
        async with self._connection() as db:
            return await finish(db, id, attempt, outcome, retry_in, error)

    async def close(self) -> None:
        """Make the writes asked for, then close the pool. Idempotent; any later call raises StoreError."""
        for grouped in (self._grouped_creates, self._grouped_deliveries, self._grouped_swaps, self._grouped_replies):
            await grouped.finish()
        await super().close()

    # -- questions -------------------------------------------------------------------------------------------------

    async def create_question(self, record: QuestionRecord, delivery: NewDelivery | None = None) -> None:
        agent_id = record.agent.id if record.agent else None
        detail = asked_detail(agent_id, [item.id for item in record.questions])
        row = (keep(record.id), record.created_at, keep_optional(agent_id), record.status, record_json(record))
        shown: tuple[str | None, ...] = (None, None, None, None)
        if delivery is not None:
            channel, key, ref = delivery
            shown = (keep(channel), keep(key), json.dumps(ref), key_detail(key))
        if not await self._grouped_creates((*row, self.owner, utc_now(), detail, *shown)):
            raise StoreError(f"question {record.id} already exists in the store")

    async def get_question(self, id: str) -> QuestionRecord | None:
        async with self._connection() as db:
            return await fetch_question(db, id)

    async def list_questions(
        self,
        *,
        status: QuestionStatus | None = None,
        agent_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[QuestionRecord]:
        where, params = conditions(
            ("q.status = %s", status),
            ("q.agent_id = %s", keep_optional(agent_id)),
            (
                "EXISTS (SELECT 1 FROM deliveries d WHERE d.question_id = q.id AND d.channel = %s)",
                keep_optional(channel),
            ),
        )
        order = sql.SQL("DESC" if newest_first else "ASC")
        query = sql.SQL(
            "SELECT record_json FROM questions q WHERE {} ORDER BY q.created_at {}, q.n {} "
            "LIMIT greatest(%s, 0) OFFSET greatest(%s, 0)"
        ).format(where, order, order)
        async with self._connection() as db:
            cursor = await db.execute(query, (*params, limit, offset))
            rows = await cursor.fetchall()
        return [QuestionRecord.model_validate_json(row[0]) for row in rows]

    async def count_questions(self, status: QuestionStatus | None = None, *, channel: str | None = None) -> int:
        where, params = conditions(
            ("q.status = %s", status),
            (
                "EXISTS (SELECT 1 FROM deliveries d WHERE d.question_id = q.id AND d.channel = %s)",
                keep_optional(channel),
            ),
        )
        async with self._connection() as db:
            cursor = await db.execute(sql.SQL("SELECT count(*) FROM questions q WHERE {}").format(where), params)
            row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def save_partial(
        self, id: str, item: AskUserQuestionAnswerItem, *, actor: str | None, channel: str
    ) -> QuestionRecord:
        while True:
            record, stored = await self._read_question(id)
            if item.id not in {question.id for question in record.questions}:
                raise ValueError(f"question {id} has no question with id {item.id!r}")
            if record.status != "pending":  # for good: an ended question never becomes pending again
                detail = {"partial": item.to_wire(), "status": record.status}
                await self.audit(id, "duplicate", channel=channel, actor=actor, detail=detail)
                return record
            updated = record.model_copy(update={"partial": record.partial | {item.id: item}})
            if await self._swap(updated, stored, "partial", channel, actor, {"item": item.to_wire()}):
                return updated

    async def add_approval(self, id: str, approval: Approval) -> tuple[QuestionRecord, bool]:
        while True:
            record, stored = await self._read_question(id)
            if record.status != "pending":
                detail = {"approval": approval.identity, "status": record.status}
                await self.audit(id, "duplicate", channel=approval.via, actor=approval.by, detail=detail)
                return record, False
            if any(earlier.identity == approval.identity for earlier in record.approvals):
                return record, False
            updated = record.model_copy(update={"approvals": [*record.approvals, approval]})
            detail = {"identity": approval.identity, "count": len(updated.approvals)}
            if await self._swap(updated, stored, "approved", approval.via, approval.by, detail):
                return updated, True

    async def resolve(
        self,
        id: str,
        status: QuestionStatus,
        *,
        answer: AskUserQuestionAnswer | None = None,
        by: str | None = None,
        via: str | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
        seen: QuestionRecord | None = None,
        learn: LearnedRule | None = None,
    ) -> Resolution:
        if status == "pending":
            raise ValueError("resolve needs a final status, not 'pending'")
        if (answer is not None) != (status == "answered"):
            raise ValueError("an answer is required for status 'answered' and only for it")
        answer_wire = answer.to_wire() if answer is not None else None
        update: dict[str, Any] = {"status": status, "answer": answer, "answered_by": by, "answered_via": via}
        update |= {"resolved_at": utc_now(), "error_code": error_code, "error_message": error_message}
        detail = {"code": error_code, "message": error_message} if answer_wire is None else {"answer": answer_wire}
        if learn is not None:
            return await self._resolve_learning(id, update, detail, learn, answer_wire=answer_wire, by=by, via=via)
        # The caller's copy is usually current: then one statement resolves and audits (`_swap`). Otherwise (no
        # copy, changed since, lost) the question is read and the swap tried again.
        record = seen if seen is not None and seen.id == id and seen.status == "pending" else None
        stored = record_json(record) if record is not None else None
        while True:
            if record is None or stored is None:
                record, stored = await self._read_question(id)
            if record.status != "pending":  # for good: the first resolution won
                if answer_wire is not None:
                    attempted = {"attempted": answer_wire, "status": record.status}
                    await self.audit(id, "duplicate", channel=via, actor=by, detail=attempted)
                return Resolution(won=False, record=record)
            resolved = record.model_copy(update=update)
            if await self._swap(resolved, stored, cast(AuditKind, status), via, by, detail):
                return Resolution(won=True, record=resolved)
            record = None

    async def _resolve_learning(
        self,
        id: str,
        update: dict[str, Any],
        detail: dict[str, Any],
        learn: LearnedRule,
        *,
        answer_wire: dict[str, Any] | None,
        by: str | None,
        via: str | None,
    ) -> Resolution:
        """`resolve` with a rule "Always allow" learned: the resolution, its audit event and the rule in one
        transaction, the question's row locked (rare enough that the grouped compare-and-swap is not worth it)."""
        async with self._transaction() as db:
            record = await require_question(db, id, lock=True)
            if record.status != "pending":
                if answer_wire is not None:
                    attempted = {"attempted": answer_wire, "status": record.status}
                    await self._append(db, id, "duplicate", via, by, attempted)
                return Resolution(won=False, record=record)
            resolved = record.model_copy(update=update)
            await db.execute(
                "UPDATE questions SET status = %s, record_json = %s WHERE id = %s",
                (resolved.status, record_json(resolved), keep(id)),
            )
            await insert_learned(db, learn)
            if urls := queued_for(self.webhooks, resolved.status):
                await queue_one(db, urls, id, resolved.status, record_json(resolved), update["resolved_at"])
            await self._append(db, id, cast(AuditKind, resolved.status), via, by, detail)
            return Resolution(won=True, record=resolved)

    # -- learned rules -------------------------------------------------------------------------------------------------

    async def learned_rules(self) -> list[LearnedRule]:
        async with self._connection() as db:
            return await select_learned(db)

    async def learned_rule(self, id: str) -> LearnedRule | None:
        async with self._connection() as db:
            return next(iter(await select_learned(db, id)), None)

    async def learn_rule(self, rule: LearnedRule) -> bool:
        async with self._connection() as db:
            return await insert_learned(db, rule)

    async def forget_rule(self, id: str) -> bool:
        async with self._connection() as db:
            return await delete_learned(db, id)

    # -- values kept, Web Push subscriptions ---------------------------------------------------------------------------

    async def keep_value(self, name: str, candidate: str) -> str:
        async with self._connection() as db:
            return await kept.keep_value(db, name, candidate)

    async def save_push_subscription(self, subscription: PushSubscription) -> None:
        async with self._connection() as db:
            await kept.save_subscription(db, subscription)

    async def delete_push_subscription(self, endpoint: str, *, person: str | None = None) -> bool:
        async with self._connection() as db:
            return await kept.delete_subscription(db, endpoint, person)

    async def list_push_subscriptions(self, persons: Collection[str] | None = None) -> list[PushSubscription]:
        async with self._connection() as db:
            return await kept.select_subscriptions(db, persons)

    # -- the change feed (bot/replicas/postgres_feed.py) ---------------------------------------------------------------

    async def changed_since(self, since: datetime | None) -> tuple[datetime, list[tuple[str, datetime]]]:
        """The database's clock now, and every question changed after `since` (none for None) with when: the latest
        of its own stamp and its deliveries' (each delivery stamps its own row), as `changed_questions` says."""
        async with self._connection() as db:
            cursor = await db.execute(
                # `since` is a parameter in each condition, not a CTE's column: the planner then sees its value
                # and reads the few changed rows by index instead of every question.
                "SELECT now.at, q.id, "
                "greatest(q.changed_at, (SELECT max(d.changed_at) FROM deliveries d WHERE d.question_id = q.id)) "
                "FROM (SELECT statement_timestamp() AS at) now LEFT JOIN (questions q JOIN ("
                "SELECT id FROM questions WHERE changed_at > coalesce(%(since)s, 'infinity'::timestamptz) UNION "
                "SELECT question_id FROM deliveries WHERE changed_at > coalesce(%(since)s, 'infinity'::timestamptz)"
                ") changed ON changed.id = q.id) ON true",
                {"since": since},
            )
            rows = await cursor.fetchall()
        return rows[0][0], [(restore(id), changed_at) for _, id, changed_at in rows if id is not None]

    async def changed_questions(self, ids: Collection[str]) -> list[tuple[QuestionRecord, datetime, tuple[str, ...]]]:
        """The questions named (unknown ids are left out), each with when it last changed (the latest of its own
        stamp and its deliveries') and the channels that have shown it: one query for a batch of changes."""
        async with self._connection() as db:
            cursor = await db.execute(
                "SELECT q.record_json, greatest(q.changed_at, d.changed_at), coalesce(d.channels, '{}') "
                "FROM questions q CROSS JOIN LATERAL (SELECT max(changed_at) AS changed_at, "
                "array_agg(channel ORDER BY channel) AS channels FROM deliveries WHERE question_id = q.id) d "
                "WHERE q.id = ANY(%s)",
                ([keep(id) for id in ids],),
            )
            rows = await cursor.fetchall()
        return [
            (QuestionRecord.model_validate_json(record), changed_at, tuple(restore(name) for name in channels))
            for record, changed_at, channels in rows
        ]

    # -- deliveries ------------------------------------------------------------------------------------------------

    async def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery:
        stored = json.dumps(ref)
        now = utc_now()
        row = (keep(question_id), keep(channel), keep(key), stored, now)
        await self._grouped_deliveries((*row, now, key_detail(key)))
        # `ref` as a later read returns it (JSON turns tuples into lists); built as stored, so not validated again.
        return Delivery.model_construct(
            question_id=question_id, channel=channel, key=key, ref=json.loads(stored), created_at=now
        )

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        async with self._transaction() as db:
            record = await require_question(db, question_id, lock=True)
            cursor = await db.execute(
                "SELECT ref_json FROM deliveries WHERE question_id = %s AND channel = %s",
                (keep(question_id), keep(channel)),
            )
            row = await cursor.fetchone()
            if record.status != "pending" or row is None:
                return None
            ref = json.loads(row[0])
            count = int(ref.get(REMINDED_KEY, 0)) + 1
            when = next_at.astimezone(UTC).isoformat(timespec="microseconds")  # as the SQLite store writes it
            ref |= {REMINDED_KEY: count, REMIND_AT_KEY: when}
            await db.execute(
                "UPDATE deliveries SET ref_json = %s WHERE question_id = %s AND channel = %s",
                (json.dumps(ref), keep(question_id), keep(channel)),
            )
            updated = record.model_copy(update={"reminders": record.reminders + 1})
            await write_record(db, updated)
            await self._append(db, question_id, "reminded", channel, None, {"count": count, "next": when})
            return updated

    async def note_on_delivery(self, question_id: str, channel: str, notes: dict[str, Any]) -> bool:
        async with self._transaction() as db:
            record = await require_question(db, question_id, lock=True)
            cursor = await db.execute(
                "SELECT ref_json FROM deliveries WHERE question_id = %s AND channel = %s",
                (keep(question_id), keep(channel)),
            )
            row = await cursor.fetchone()
            if record.status != "pending" or row is None:
                return False
            await db.execute(
                "UPDATE deliveries SET ref_json = %s WHERE question_id = %s AND channel = %s",
                (json.dumps(json.loads(row[0]) | notes), keep(question_id), keep(channel)),
            )
            return True

    async def get_delivery(self, question_id: str, channel: str) -> Delivery | None:
        found = await self._deliveries("question_id = %s AND channel = %s", question_id, channel)
        return next(iter(found), None)

    async def has_delivery(self, question_id: str, channel: str) -> bool:
        async with self._connection() as db:
            cursor = await db.execute(
                "SELECT 1 FROM deliveries WHERE question_id = %s AND channel = %s", (keep(question_id), keep(channel))
            )
            return await cursor.fetchone() is not None

    async def find_delivery(self, channel: str, key: str) -> Delivery | None:
        return next(iter(await self._deliveries("channel = %s AND key = %s", channel, key)), None)

    async def find_delivery_with_question(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None:
        # Every reply reads this: concurrent ones are read in groups, one query for many (`bot.store.postgres.groups`).
        found = await self._grouped_replies((keep(channel), keep(key)))
        if found is None:
            return None
        record, question_id, ref, created_at = found
        delivery = Delivery(
            question_id=restore(question_id),
            channel=channel,
            key=key,
            ref=json.loads(ref),
            created_at=created_at,
        )
        return QuestionRecord.model_validate_json(record), delivery

    async def deliveries(self, question_id: str) -> list[Delivery]:
        return await self._deliveries("question_id = %s", question_id)

    async def _deliveries(self, where: LiteralString, *params: str) -> list[Delivery]:
        query = sql.SQL(
            "SELECT question_id, channel, key, ref_json, created_at FROM deliveries WHERE {} ORDER BY created_at, n"
        ).format(sql.SQL(where))
        async with self._connection() as db:
            cursor = await db.execute(query, [keep(param) for param in params])
            rows = await cursor.fetchall()
        return [
            Delivery(
                question_id=restore(question_id),
                channel=restore(channel),
                key=restore(key),
                ref=json.loads(ref),
                created_at=created_at,
            )
            for question_id, channel, key, ref, created_at in rows
        ]

    # -- audit -----------------------------------------------------------------------------------------------------

    async def audit(
        self,
        question_id: str,
        kind: AuditKind,
        *,
        channel: str | None = None,
        actor: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEvent:
        async with self._connection() as db:
            try:
                row = audit_row(question_id, kind, channel, actor, detail or {})
                cursor = await db.execute(APPEND_AUDIT, (*AUDIT_LOCK, *row))
                appended = await cursor.fetchone()
                assert appended is not None
                seq, prev, digest = appended
                return event_from_row((seq, *row, prev, digest))
            except psycopg.errors.ForeignKeyViolation:
                raise StoreError(f"no question {question_id} in the store") from None

    async def audit_rule(self, *, actor: str | None, detail: dict[str, Any]) -> AuditEvent:
        async with self._connection() as db:
            row = audit_row(None, "rule", None, actor, detail)
            cursor = await db.execute(APPEND_AUDIT, (*AUDIT_LOCK, *row))
            appended = await cursor.fetchone()
            assert appended is not None
            seq, prev, digest = appended
            return event_from_row((seq, *row, prev, digest))

    async def history(
        self,
        *,
        question_id: str | None = None,
        agent_id: str | None = None,
        kinds: Collection[AuditKind] | None = None,
        limit: int = 200,
        after_seq: int = 0,
    ) -> list[AuditEvent]:
        if kinds is not None and not kinds:
            return []
        where, params = conditions(
            ("a.seq > %s", after_seq),
            ("a.question_id = %s", keep_optional(question_id)),
            (
                "(a.question_id IN (SELECT id FROM questions WHERE agent_id = %s) "
                "OR (a.question_id IS NULL AND a.actor = %s))",
                None if agent_id is None else (keep(agent_id), keep(agent_id)),
            ),
            ("a.kind = ANY(%s)", list(kinds) if kinds else None),
        )
        query = sql.SQL(
            "SELECT seq, at, question_id, kind, channel, actor, detail_json, prev, hash FROM audit a WHERE {} "
            "ORDER BY a.seq LIMIT greatest(%s, 0)"
        ).format(where)
        async with self._connection() as db:
            cursor = await db.execute(query, (*params, limit))
            rows = await cursor.fetchall()
        return [event_from_row(row) for row in rows]

    async def audit_rows(self, *, after_seq: int = 0, limit: int = 1000) -> list[ChainRow]:
        async with self._connection() as db:
            cursor = await db.execute(
                "SELECT seq, at, question_id, kind, channel, actor, detail_json, prev, hash FROM audit "
                "WHERE seq > %s ORDER BY seq LIMIT greatest(%s, 0)",
                (after_seq, limit),
            )
            return [chain_row(row) for row in await cursor.fetchall()]

    # -- events received ---------------------------------------------------------------------------------------------

    async def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool:
        moment = now or utc_now()
        # One statement: forget the expired events but this one, and record this one unless it is remembered (an
        # expired sighting of it counts as forgotten: the row is renewed). The row count says whether it was new.
        async with self._connection() as db:
            cursor = await db.execute(
                "WITH forgotten AS (DELETE FROM seen_events WHERE seen_at < %(expired)s "
                "AND (channel, key) <> (%(channel)s, %(key)s)) "
                "INSERT INTO seen_events (channel, key, seen_at) VALUES (%(channel)s, %(key)s, %(now)s) "
                "ON CONFLICT (channel, key) DO UPDATE SET seen_at = excluded.seen_at "
                "WHERE seen_events.seen_at < %(expired)s",
                {"expired": moment - SEEN_EVENTS_KEPT, "channel": keep(channel), "key": keep(key), "now": moment},
            )
            return cursor.rowcount == 1

    async def fire_once(self, question_id: str, name: str) -> bool:
        async with self._connection() as db:
            try:
                cursor = await db.execute(
                    "INSERT INTO fired (question_id, name, at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    (keep(question_id), keep(name), utc_now()),
                )
            except psycopg.errors.ForeignKeyViolation:
                raise StoreError(f"no question {question_id} in the store") from None
            return cursor.rowcount == 1

    # -- plumbing --------------------------------------------------------------------------------------------------

    async def _append(
        self,
        db: AsyncConnection[Any] | AsyncCursor[Any],
        question_id: str,
        kind: AuditKind,
        channel: str | None,
        actor: str | None,
        detail: dict[str, Any],
    ) -> None:
        """Insert one audit row, the transaction's last write.

        A sequence hands out numbers at insert, not at commit: without the lock, a reader paging by `after_seq`
        could see event 8 committed before event 7 and never come back for 7. Held from here to the commit, it
        makes the audit log's commit order its `seq` order (writers queue only for this last step).
        """
        await db.execute(APPEND_AUDIT, (*AUDIT_LOCK, *audit_row(question_id, kind, channel, actor, detail)))

    async def _read_question(self, id: str) -> tuple[QuestionRecord, str]:
        async with self._connection() as db:
            return await read_question(db, id)

    async def _swap(
        self,
        updated: QuestionRecord,
        stored: str,
        kind: AuditKind,
        channel: str | None,
        actor: str | None,
        detail: dict[str, Any],
    ) -> bool:
        """Write `updated` (its status too: a resolution) and its audit event in one statement if the question is
        still pending and exactly as read (`stored`, compared by digest); False if anything changed since: read
        again and retry. Of resolvers holding the same copy one swaps, the others read the winner's record: the
        first resolution wins (two swaps of one question never share a group). Each retry means another writer's
        change went in, so the retries end. A read and a swap are two round trips, without BEGIN or COMMIT, where a
        locking read in a transaction took five."""
        check_kind(kind)
        digest = hashlib.sha256(stored.encode()).digest()
        row = (keep(updated.id), updated.status, record_json(updated), digest, utc_now(), kind)
        return await self._grouped_swaps((*row, keep_optional(channel), keep_optional(actor), json.dumps(detail)))

    # -- the groups' statements (`bot.store.postgres.groups`) ----------------------------------------------------------

    async def _create_questions(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        def refused(error: psycopg.Error) -> StoreError | None:
            if isinstance(error, psycopg.errors.UniqueViolation):  # a delivery's key: the question id is DO NOTHING
                channel, key = (restore(value) for value in rows[0][8:10])
                return key_taken(channel, key)
            return None

        if self._asked_hooks:
            made = await self._group(CREATE_QUESTIONS_HOOKED, rows, refused, self._asked_hooks)
        else:
            made = await self._group(CREATE_QUESTIONS, rows, refused)
        return [row[0] in made for row in rows]

    async def _add_deliveries(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        def refused(error: psycopg.Error) -> StoreError | None:
            question_id, channel, key = (restore(value) for value in rows[0][:3])
            if isinstance(error, psycopg.errors.UniqueViolation):
                return key_taken(channel, key)
            if isinstance(error, psycopg.errors.ForeignKeyViolation):
                return StoreError(f"no question {question_id} in the store")
            return None

        await self._group(ADD_DELIVERIES, rows, refused)
        return [True] * len(rows)

    async def _swap_records(self, rows: Sequence[tuple[Any, ...]]) -> list[bool]:
        if self._resolved_hooks:
            made = await self._group(SWAP_RECORDS_HOOKED, rows, hooks=self._resolved_hooks)
        else:
            made = await self._group(SWAP_RECORDS, rows)
        return [row[0] in made for row in rows]

    async def _find_replies(self, rows: Sequence[tuple[str, str]]) -> list[tuple[Any, ...] | None]:
        """The question and delivery of each `(channel, key)`, None for one not found."""
        async with self._connection() as db:
            cursor = await db.execute(FIND_REPLIES, [list(column) for column in zip(*rows, strict=True)])
            found = {(channel, key): rest for channel, key, *rest in await cursor.fetchall()}
        return [tuple(found[row]) if row in found else None for row in rows]

    async def _group(
        self,
        statement: LiteralString,
        rows: Sequence[tuple[Any, ...]],
        refused: Callable[[psycopg.Error], StoreError | None] = lambda error: None,
        hooks: tuple[list[str], list[str]] | None = None,
    ) -> set[str]:
        """Run a group's statement on its rows (a column each: the statement's arrays); the ids it returned (as
        kept). A group of several that fails for something one row can cause raises SplitGroup; one alone raises
        what `refused` says of the error, if anything, else StoreError."""
        columns = [list(column) for column in zip(*rows, strict=True)]
        async with self._connection() as db:
            try:
                cursor = await db.execute(statement, (*columns, *(hooks or ()), *AUDIT_LOCK))
            except psycopg.Error as error:
                if split_on(error, len(rows)):
                    raise SplitGroup from error
                if (reason := refused(error)) is not None:
                    raise reason from None
                raise
            return {row[0] for row in await cursor.fetchall()}
