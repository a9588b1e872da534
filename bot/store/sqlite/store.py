"""The durable store: pending questions, their deliveries, answers and the audit log, in one SQLite file.

A restart of the bot must lose no question and no answer, so every call is one short transaction (or part of a
group under one commit, `StoreFile.write_together`) that is committed before it returns; the file, its lock and its
transactions are `bot.store.sqlite.file`'s. The calls are synchronous on purpose: local SQLite is fast, and one code
path beats a sync and an async copy.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, cast, get_args

from bot.store.chain import GENESIS, ChainRow, chain_hash
from bot.store.errors import StoreError as StoreError
from bot.store.errors import StoreUnavailable as StoreUnavailable
from bot.store.errors import key_taken
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
from bot.store.sqlite.file import StoreFile
from bot.store.sqlite.kept import delete_subscription, keep_value, save_subscription, select_subscriptions
from bot.store.sqlite.learned import delete_learned, insert_learned, select_learned
from bot.store.sqlite.schema import APPLICATION_ID as APPLICATION_ID
from bot.store.sqlite.schema import MIGRATIONS as MIGRATIONS
from bot.store.sqlite.schema import SCHEMA_VERSION as SCHEMA_VERSION
from bot.store.sqlite.times import time_text
from bot.store.sqlite.webhooks import any_due, claim_deliveries, finish_delivery, queue_deliveries
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, WebhookTarget, queued_for
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem

_AUDIT_KINDS: frozenset[str] = frozenset(get_args(AuditKind))


class Store(StoreFile):
    """The handraise SQLite store. Open with `Store.open(path)`; safe to share between threads of one process and
    between processes on one file."""

    _chain_head: tuple[int, str | None] = (0, None)
    """The audit log's last row as this store last wrote it (seq, hash); seq 0: not known (see `_chain`)."""
    webhooks: tuple[WebhookTarget, ...] = ()
    """The webhooks whose deliveries asks and resolutions queue in their own transaction (`bot.webhooks`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._written: dict[str, tuple[QuestionRecord, str]] = {}
        """The JSON of records this store wrote, by question id, with the record it is of (see `_json_of`)."""

    # -- questions -------------------------------------------------------------------------------------------------

    def create_question(self, record: QuestionRecord, delivery: NewDelivery | None = None) -> None:
        """Store a new question and audit `asked`; with `delivery`, that delivery too and its `delivered` event, in
        the same transaction (as `add_delivery` would record it).

        Raises StoreError if a question with its id exists, or the delivery's key is used by another question on
        its channel (then nothing is stored).
        """
        question_id = record.id
        agent_id = record.agent.id if record.agent else None
        now = time_text(utc_now())
        detail = asked_detail(agent_id, [item.id for item in record.questions])
        asked: _Row = (now, question_id, "asked", None, None, detail)
        stored = _record_json(record)
        with self._write() as db:
            try:
                db.execute(
                    "INSERT INTO questions VALUES (?, ?, ?, ?, ?)",
                    (question_id, time_text(record.created_at), agent_id, record.status, stored),
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"question {question_id} already exists in the store") from None
            self._wrote(record, stored)
            if self.webhooks and (urls := queued_for(self.webhooks, "asked")):
                queue_deliveries(db, urls, question_id, "asked", stored, record.created_at)
            if delivery is None:
                self._chain(db, asked)
                return
            channel, key, ref = delivery
            _insert_delivery(db, question_id, channel, key, json.dumps(ref), now)
            # Both events in one statement, in this order (their seqs): asked, then delivered.
            shown: _Row = (now, question_id, "delivered", channel, None, key_detail(key))
            self._chain(db, asked, shown)

    def get_question(self, id: str) -> QuestionRecord | None:
        with self._read() as db:
            return _fetch_question(db, id)

    def list_questions(
        self,
        *,
        status: QuestionStatus | None = None,
        agent_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[QuestionRecord]:
        """Questions by creation time; `channel` keeps those with a delivery on that channel. Page with `offset`."""
        where, params = _where(
            ("q.status = ?", status),
            ("q.agent_id = ?", agent_id),
            ("EXISTS (SELECT 1 FROM deliveries d WHERE d.question_id = q.id AND d.channel = ?)", channel),
        )
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT record_json FROM questions q WHERE {where} ORDER BY q.created_at {order}, q.rowid {order}"
        with self._read() as db:
            rows = db.execute(f"{sql} LIMIT max(?, 0) OFFSET max(?, 0)", (*params, limit, offset)).fetchall()
        return [QuestionRecord.model_validate_json(row[0]) for row in rows]

    def count_questions(self, status: QuestionStatus | None = None, *, channel: str | None = None) -> int:
        """How many questions there are (with `status`; with a delivery on `channel`), however many that is."""
        where, params = _where(
            ("status = ?", status),
            ("EXISTS (SELECT 1 FROM deliveries d WHERE d.question_id = q.id AND d.channel = ?)", channel),
        )
        with self._read() as db:
            return int(db.execute(f"SELECT count(*) FROM questions q WHERE {where}", params).fetchone()[0])

    def save_partial(
        self, id: str, item: AskUserQuestionAnswerItem, *, actor: str | None, channel: str
    ) -> QuestionRecord:
        """Record the answer to one question of a pending request (replacing an earlier one) and audit `partial`.

        Once the request is resolved the item is not saved: the record comes back unchanged (check its `status`) and
        the attempt is audited as `duplicate`. Raises StoreError for an unknown id, ValueError for an item whose id
        is not one of the request's questions.
        """
        with self._write() as db:
            record = _require_question(db, id)
            if item.id not in {question.id for question in record.questions}:
                raise ValueError(f"question {id} has no question with id {item.id!r}")
            if record.status != "pending":
                detail = {"partial": item.to_wire(), "status": record.status}
                self._append(db, id, "duplicate", channel, actor, detail)
                return record
            updated = record.model_copy(update={"partial": record.partial | {item.id: item}})
            db.execute("UPDATE questions SET record_json = ? WHERE id = ?", (_record_json(updated), id))
            self._append(db, id, "partial", channel, actor, {"item": item.to_wire()})
            return updated

    def add_approval(self, id: str, approval: Approval) -> tuple[QuestionRecord, bool]:
        """Add one person's approval to a pending question; returns the record and whether it counted.

        The same identity counts once (a second approval changes nothing); once the question is resolved nothing is
        added and the attempt is audited as `duplicate`. Raises StoreError for an unknown id.
        """
        with self._write() as db:
            record = _require_question(db, id)
            if record.status != "pending":
                detail = {"approval": approval.identity, "status": record.status}
                self._append(db, id, "duplicate", approval.via, approval.by, detail)
                return record, False
            if any(earlier.identity == approval.identity for earlier in record.approvals):
                return record, False
            updated = record.model_copy(update={"approvals": [*record.approvals, approval]})
            db.execute("UPDATE questions SET record_json = ? WHERE id = ?", (_record_json(updated), id))
            detail = {"identity": approval.identity, "count": len(updated.approvals)}
            self._append(db, id, "approved", approval.via, approval.by, detail)
            return updated, True

    def resolve(
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
        """Move a pending question to `status`, once: the first resolution wins, for good.

        The winner's audit event is committed before this returns. A loser gets `won=False` and the current record
        (who resolved it, how); a losing *answer* is audited as `duplicate`. `seen` is the record as the caller
        last read it: when the stored one is still exactly that, it is not parsed again. Raises StoreError for an
        unknown id and ValueError when `status` is `pending` or `answer` is given for any status but `answered`
        (or missing for it).

        `learn` is a rule "Always allow" learned by this answer: stored with the resolution, in the same commit, when
        the resolution wins (and nothing is learned when it loses).
        """
        if status == "pending":
            raise ValueError("resolve needs a final status, not 'pending'")
        if (answer is not None) != (status == "answered"):
            raise ValueError("an answer is required for status 'answered' and only for it")
        answer_wire = answer.to_wire() if answer is not None else None
        update: dict[str, Any] = {"status": status, "answer": answer, "answered_by": by, "answered_via": via}
        update |= {"resolved_at": utc_now(), "error_code": error_code, "error_message": error_message}
        with self._write() as db:
            resolved: QuestionRecord | None = None
            resolved_json = ""  # the JSON stored for `resolved`, once it is set: also what a webhook delivery holds
            if seen is not None and seen.id == id and seen.status == "pending":
                # Usually the caller's record is still the stored one: then one UPDATE that requires exactly it both
                # checks that and resolves, without reading the record first. Else, the long way below.
                candidate = seen.model_copy(update=update)
                resolved_json = _record_json(candidate)
                cursor = db.execute(
                    "UPDATE questions SET status = ?, record_json = ? "
                    "WHERE id = ? AND status = 'pending' AND record_json = ?",
                    (status, resolved_json, id, self._json_of(seen)),
                )
                if cursor.rowcount == 1:
                    resolved = candidate
            if resolved is None:
                record = _require_question(db, id, seen)
                candidate = record.model_copy(update=update)
                resolved_json = _record_json(candidate)
                # The write lock already serialises resolvers; the status guard keeps the rule in the statement.
                cursor = db.execute(
                    "UPDATE questions SET status = ?, record_json = ? WHERE id = ? AND status = 'pending'",
                    (status, resolved_json, id),
                )
                if cursor.rowcount != 1:
                    if answer_wire is not None:
                        self._append(db, id, "duplicate", via, by, {"attempted": answer_wire, "status": record.status})
                    return Resolution(won=False, record=record)
                resolved = candidate
            if learn is not None:
                insert_learned(db, learn)
            if self.webhooks and (urls := queued_for(self.webhooks, status)):
                queue_deliveries(db, urls, id, status, resolved_json, update["resolved_at"])
            # Each final status is audited under the kind of the same name.
            detail = {"code": error_code, "message": error_message} if answer_wire is None else {"answer": answer_wire}
            self._append(db, id, cast(AuditKind, status), via, by, detail)
            self._written.pop(id, None)  # ended: nobody resolves it again from what they last saw
            return Resolution(won=True, record=resolved)

    # -- deliveries ------------------------------------------------------------------------------------------------

    def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery:
        """Record where a question went on `channel`, replacing an earlier delivery there; audit `delivered`.

        Raises StoreError for an unknown question or a `key` already used by another question on this channel.
        """
        stored = json.dumps(ref)
        created_at = utc_now()
        now = time_text(created_at)
        with self._write() as db:
            _insert_delivery(db, question_id, channel, key, stored, now)
            self._chain(db, (now, question_id, "delivered", channel, None, key_detail(key)))
        # `ref` as a later read returns it (JSON turns tuples into lists); built as stored, so not validated again.
        return Delivery.model_construct(
            question_id=question_id, channel=channel, key=key, ref=json.loads(stored), created_at=created_at
        )

    def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        """Count one reminder on `channel` and keep when the next is due, with its delivery, so that a restart goes
        on where it left off; audit `reminded`. None (and nothing recorded) once the question is no longer pending
        or has no delivery there. Raises StoreError for an unknown question."""
        with self._write() as db:
            record = _require_question(db, question_id)
            row = db.execute(
                "SELECT ref_json FROM deliveries WHERE question_id = ? AND channel = ?", (question_id, channel)
            ).fetchone()
            if record.status != "pending" or row is None:
                return None
            ref = json.loads(row[0])
            count = int(ref.get(REMINDED_KEY, 0)) + 1
            ref |= {REMINDED_KEY: count, REMIND_AT_KEY: time_text(next_at)}
            db.execute(
                "UPDATE deliveries SET ref_json = ? WHERE question_id = ? AND channel = ?",
                (json.dumps(ref), question_id, channel),
            )
            updated = record.model_copy(update={"reminders": record.reminders + 1})
            db.execute("UPDATE questions SET record_json = ? WHERE id = ?", (_record_json(updated), question_id))
            self._append(db, question_id, "reminded", channel, None, {"count": count, "next": time_text(next_at)})
            return updated

    def note_on_delivery(self, question_id: str, channel: str, notes: dict[str, Any]) -> bool:
        """Merge `notes` into the delivery's ref while the question is pending (`AsyncStore.note_on_delivery`)."""
        with self._write() as db:
            record = _require_question(db, question_id)
            row = db.execute(
                "SELECT ref_json FROM deliveries WHERE question_id = ? AND channel = ?", (question_id, channel)
            ).fetchone()
            if record.status != "pending" or row is None:
                return False
            db.execute(
                "UPDATE deliveries SET ref_json = ? WHERE question_id = ? AND channel = ?",
                (json.dumps(json.loads(row[0]) | notes), question_id, channel),
            )
            return True

    def get_delivery(self, question_id: str, channel: str) -> Delivery | None:
        return self._delivery("question_id = ? AND channel = ?", question_id, channel)

    def has_delivery(self, question_id: str, channel: str) -> bool:
        """Whether the question was shown on `channel`, without reading the delivery itself."""
        with self._read() as db:
            sql = "SELECT 1 FROM deliveries WHERE question_id = ? AND channel = ?"
            return db.execute(sql, (question_id, channel)).fetchone() is not None

    def find_delivery(self, channel: str, key: str) -> Delivery | None:
        """The delivery an incoming reply refers to, by the channel's lookup key."""
        return self._delivery("channel = ? AND key = ?", channel, key)

    def find_delivery_with_question(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None:
        """The delivery an incoming reply refers to (as `find_delivery`) and its question as stored now, read
        together: a reply needs both."""
        with self._read() as db:
            row = db.execute(
                "SELECT q.record_json, d.question_id, d.ref_json, d.created_at "
                "FROM deliveries d JOIN questions q ON q.id = d.question_id WHERE d.channel = ? AND d.key = ?",
                (channel, key),
            ).fetchone()
        if row is None:
            return None
        record, question_id, ref, created_at = row
        delivery = Delivery(
            question_id=question_id, channel=channel, key=key, ref=json.loads(ref), created_at=created_at
        )
        return QuestionRecord.model_validate_json(record), delivery

    def deliveries(self, question_id: str) -> list[Delivery]:
        return self._deliveries("question_id = ?", question_id)

    def _delivery(self, where: str, *params: str) -> Delivery | None:
        """The one delivery a unique key names (no sort, no list: every answer looks one up)."""
        with self._read() as db:
            row = db.execute(f"SELECT * FROM deliveries WHERE {where}", params).fetchone()
        if row is None:
            return None
        question_id, channel, key, ref, created_at = row
        return Delivery(question_id=question_id, channel=channel, key=key, ref=json.loads(ref), created_at=created_at)

    def _deliveries(self, where: str, *params: str) -> list[Delivery]:
        with self._read() as db:
            rows = db.execute(f"SELECT * FROM deliveries WHERE {where} ORDER BY created_at, rowid", params).fetchall()
        return [
            Delivery(question_id=question_id, channel=channel, key=key, ref=json.loads(ref), created_at=created_at)
            for question_id, channel, key, ref, created_at in rows
        ]

    # -- audit -----------------------------------------------------------------------------------------------------

    def audit(
        self,
        question_id: str,
        kind: AuditKind,
        *,
        channel: str | None = None,
        actor: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEvent:
        """Append one event. Raises StoreError for an unknown question, TypeError for a detail JSON cannot hold."""
        with self._write() as db:
            _require_exists(db, question_id)
            return _event_from_row(self._append(db, question_id, kind, channel, actor, detail or {}))

    def audit_rule(self, *, actor: str | None, detail: dict[str, Any]) -> AuditEvent:
        """Append a `rule` line: a decision a rule made without a person (no question); `actor` is the agent's id."""
        with self._write() as db:
            return _event_from_row(self._append(db, None, "rule", None, actor, detail))

    def history(
        self,
        *,
        question_id: str | None = None,
        agent_id: str | None = None,
        kinds: Collection[AuditKind] | None = None,
        limit: int = 200,
        after_seq: int = 0,
    ) -> list[AuditEvent]:
        """Audit events oldest first; page with `after_seq` set to the last `seq` seen."""
        if kinds is not None and not kinds:
            return []
        where, params = _where(
            ("a.seq > ?", after_seq),
            ("a.question_id = ?", question_id),
            (
                "(a.question_id IN (SELECT id FROM questions WHERE agent_id = ?) "
                "OR (a.question_id IS NULL AND a.actor = ?))",
                agent_id,
                agent_id,
            ),
            (f"a.kind IN ({', '.join('?' * len(kinds))})", *kinds) if kinds else ("any kind", None),
        )
        sql = f"SELECT * FROM audit a WHERE {where} ORDER BY a.seq LIMIT max(?, 0)"
        with self._read() as db:
            rows = db.execute(sql, (*params, limit)).fetchall()
        return [_event_from_row(row) for row in rows]

    def audit_rows(self, *, after_seq: int = 0, limit: int = 1000) -> list[ChainRow]:
        """Audit rows exactly as stored, chain columns included, oldest first: for `--verify` and `--export`."""
        sql = (
            "SELECT seq, at, question_id, kind, channel, actor, detail_json, prev, hash FROM audit "
            "WHERE seq > ? ORDER BY seq LIMIT max(?, 0)"
        )
        with self._read() as db:
            return [ChainRow(*row) for row in db.execute(sql, (after_seq, limit))]

    # -- webhook deliveries (bot/store/webhook_queue.py) -----------------------------------------------------------

    def claim_webhooks(
        self, urls: Sequence[str], *, lease_seconds: float, limit: int, now: datetime | None = None
    ) -> list[WebhookDelivery]:
        """Claim the deliveries to `urls` that are due, oldest first (at most `limit`), each leased for
        `lease_seconds`. Checked by a read first: an idle queue costs no write."""
        moment = now or utc_now()
        if not urls:
            return []
        with self._read() as db:
            if not any_due(db, urls, moment):
                return []
        with self._write() as db:
            return claim_deliveries(db, urls, moment, lease_seconds, limit)

    def finish_webhook(
        self,
        id: str,
        attempt: int,
        outcome: WebhookOutcome,
        *,
        retry_in: float | None = None,
        error: str | None = None,
    ) -> bool:
        """Record how attempt `attempt` ended: delivered, retried in `retry_in` seconds, or failed for good. False
        when that attempt is no longer the delivery's latest (its lease ran out)."""
        due = utc_now() + timedelta(seconds=retry_in) if retry_in is not None else None
        with self._write() as db:
            return finish_delivery(db, id, attempt, outcome, due, error)

    # -- learned rules -------------------------------------------------------------------------------------------------

    def learned_rules(self) -> list[LearnedRule]:
        """Every rule "Always allow" learned, oldest first."""
        with self._read() as db:
            return select_learned(db)

    def learned_rule(self, id: str) -> LearnedRule | None:
        with self._read() as db:
            return next(iter(select_learned(db, id)), None)

    def learn_rule(self, rule: LearnedRule) -> bool:
        """Store a learned rule; the same id twice is one rule (False: it was stored already)."""
        with self._write() as db:
            return insert_learned(db, rule)

    def forget_rule(self, id: str) -> bool:
        """Remove a learned rule; False when there is none with that id."""
        with self._write() as db:
            return delete_learned(db, id)

    # -- values kept, Web Push subscriptions ---------------------------------------------------------------------------

    def keep_value(self, name: str, candidate: str) -> str:
        with self._write() as db:
            return keep_value(db, name, candidate)

    def save_push_subscription(self, subscription: PushSubscription) -> None:
        with self._write() as db:
            save_subscription(db, subscription)

    def delete_push_subscription(self, endpoint: str, *, person: str | None = None) -> bool:
        with self._write() as db:
            return delete_subscription(db, endpoint, person)

    def list_push_subscriptions(self, persons: Collection[str] | None = None) -> list[PushSubscription]:
        with self._read() as db:
            return select_subscriptions(db, persons)

    # -- events received ---------------------------------------------------------------------------------------------

    def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool:
        """Remember the event `key` (Slack's `event_id`) received on `channel`: True the first time, False for a
        re-delivery, also after a restart and from another process on the same file.

        Ids older than SEEN_EVENTS_KEPT are forgotten on the way, so the table holds about a day of events.
        """
        moment = now or utc_now()
        with self._write() as db:
            db.execute("DELETE FROM seen_events WHERE seen_at < ?", (time_text(moment - SEEN_EVENTS_KEPT),))
            cursor = db.execute(
                "INSERT INTO seen_events VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (channel, key, time_text(moment))
            )
            return cursor.rowcount == 1

    def fire_once(self, question_id: str, name: str) -> bool:
        """Record that the timer `name` (e.g. "escalate:slack") fired for the question: True the first time only,
        also after a restart and from another process, so a timer acts once per question.

        Raises StoreError for an unknown question.
        """
        with self._write() as db:
            if db.execute("SELECT 1 FROM questions WHERE id = ?", (question_id,)).fetchone() is None:
                raise StoreError(f"no question {question_id} in the store")
            cursor = db.execute(
                "INSERT INTO fired VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (question_id, name, time_text(utc_now()))
            )
            return cursor.rowcount == 1

    # -- plumbing --------------------------------------------------------------------------------------------------

    def _append(
        self,
        db: sqlite3.Connection,
        question_id: str | None,
        kind: AuditKind,
        channel: str | None,
        actor: str | None,
        detail: dict[str, Any],
    ) -> tuple[Any, ...]:
        """Insert one audit row; returns it as a later read would (the caller builds an AuditEvent only if needed)."""
        if kind not in _AUDIT_KINDS:
            raise ValueError(f"unknown audit kind {kind!r}")
        return self._chain(db, (time_text(utc_now()), question_id, kind, channel, actor, json.dumps(detail)))[0]

    def _chain(self, db: sqlite3.Connection, *rows: _Row) -> list[tuple[Any, ...]]:
        """Append `rows` (one or two) to the audit log, chained after its last row; returns them as stored.

        The last row is usually the one this store appended last, so its seq and hash are kept here (and forgotten
        when a rollback may have undone it) instead of read first. Rows get seq = the last one's + 1, so a row
        another process appended since takes that seq first and the insert fails on the primary key: then the last
        row is read and the rows chained after it. Either way inside the write transaction, whose lock keeps every
        other writer out until the commit.
        """
        last_seq, last_hash = self._chain_head
        if last_seq > 0:
            chained = _chained(last_seq, last_hash, rows)
            try:
                db.execute(_INSERTS[len(rows)], (*chained[0], *chained[1]) if len(rows) == 2 else chained[0])
            except sqlite3.IntegrityError as error:
                if error.sqlite_errorcode != sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
                    raise
            else:
                self._chain_head = (chained[-1][0], chained[-1][-1])
                return chained
        last = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        last_seq, last_hash = (0, None) if last is None else (int(last[0]), last[1])
        chained = _chained(last_seq, last_hash, rows)
        db.execute(_INSERTS[len(rows)], tuple(value for row in chained for value in row))
        self._chain_head = (chained[-1][0], chained[-1][-1])
        return chained

    def _rolled_back(self) -> None:
        self._chain_head = (0, None)
        self._written.clear()  # a record written in what was undone is not stored after all

    def _wrote(self, record: QuestionRecord, stored: str) -> None:
        """Keep the JSON `record` was stored as, for the resolution that usually follows (the oldest go first)."""
        written = self._written
        written[record.id] = (record, stored)
        if len(written) > WRITTEN_KEPT:
            del written[next(iter(written))]

    def _json_of(self, record: QuestionRecord) -> str:
        """`record` as the store writes it: the text kept when this store wrote that very record (records are
        frozen, so it still reads the same), else serialised again. An answer's resolution compares the stored row
        with the record its channel holds, usually the one its ask stored: one serialisation fewer per answer."""
        kept = self._written.get(record.id)
        if kept is not None and kept[0] is record:
            return kept[1]
        return _record_json(record)


WRITTEN_KEPT = 4096
"""Records whose stored JSON `Store` keeps for their resolution: the pending ones an answer usually comes for, a
bounded memory when a replica holds many more (the others are serialised again when resolved)."""

_Row = tuple[str, str | None, str, str | None, str | None, str]
"""An audit row before it is chained: at, question_id, kind, channel, actor, detail_json."""

_COLUMNS = "seq, at, question_id, kind, channel, actor, detail_json, prev, hash"
_ONE = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERTS = {
    1: f"INSERT INTO audit ({_COLUMNS}) VALUES {_ONE}",
    2: f"INSERT INTO audit ({_COLUMNS}) VALUES {_ONE}, {_ONE}",
}


def _chained(last_seq: int, last_hash: str | None, rows: tuple[_Row, ...]) -> list[tuple[Any, ...]]:
    """`rows` with their seqs, `prev` and `hash`, after the row `(last_seq, last_hash)` (0 and None: none; a hash of
    None: a row from before the chain, so the chain starts again from 64 zeros)."""
    seq, prev = last_seq, last_hash or GENESIS
    chained: list[tuple[Any, ...]] = []
    for at, question_id, kind, channel, actor, detail in rows:
        seq += 1
        digest = chain_hash(prev, seq, at, question_id, kind, channel, actor, detail)
        chained.append((seq, at, question_id, kind, channel, actor, detail, prev, digest))
        prev = digest
    return chained


def _where(*filters: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """AND together the `(sql, *params)` filters whose first parameter is not None (None means "any")."""
    active = [(sql, params) for sql, *params in filters if params[0] is not None]
    return " AND ".join(["1", *(sql for sql, _ in active)]), [param for _, params in active for param in params]


def _record_json(record: QuestionRecord) -> str:
    # by_alias: the questions and answers inside are kept in their camelCase wire form.
    return record.model_dump_json(by_alias=True, exclude_none=True)


def _fetch_question(db: sqlite3.Connection, id: str, seen: QuestionRecord | None = None) -> QuestionRecord | None:
    row = db.execute("SELECT record_json FROM questions WHERE id = ?", (id,)).fetchone()
    if row is None:
        return None
    # Serialising is several times cheaper than parsing and validating: reuse what the caller holds if it is current.
    if seen is not None and seen.id == id and _record_json(seen) == row[0]:
        return seen
    return QuestionRecord.model_validate_json(row[0])


def _require_question(db: sqlite3.Connection, id: str, seen: QuestionRecord | None = None) -> QuestionRecord:
    record = _fetch_question(db, id, seen)
    if record is None:
        raise StoreError(f"no question {id} in the store")
    return record


def _insert_delivery(db: sqlite3.Connection, question_id: str, channel: str, key: str, ref: str, at: str) -> None:
    # An unknown question is refused by the foreign key (the connection enforces them), not by a SELECT first.
    try:
        db.execute(
            "INSERT INTO deliveries VALUES (?, ?, ?, ?, ?) ON CONFLICT (question_id, channel) DO UPDATE "
            "SET key = excluded.key, ref_json = excluded.ref_json, created_at = excluded.created_at",
            (question_id, channel, key, ref, at),
        )
    except sqlite3.IntegrityError as error:
        if error.sqlite_errorcode == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
            raise StoreError(f"no question {question_id} in the store") from None
        raise key_taken(channel, key) from None


def _require_exists(db: sqlite3.Connection, id: str) -> None:
    # Without reading the record: a question can be megabytes, and only its existence matters here.
    if db.execute("SELECT 1 FROM questions WHERE id = ?", (id,)).fetchone() is None:
        raise StoreError(f"no question {id} in the store")


def _event_from_row(row: tuple[Any, ...]) -> AuditEvent:
    seq, at, question_id, kind, channel, actor, detail, prev, digest = row
    return AuditEvent(
        seq=seq,
        at=at,
        question_id=question_id,
        kind=kind,
        channel=channel,
        actor=actor,
        detail=json.loads(detail),
        prev=prev,
        hash=digest,
    )
