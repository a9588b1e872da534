"""The SQLite store behind the asynchronous interface (`bot.store.interface.AsyncStore`) that the program sees."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

from bot.store.chain import ChainRow
from bot.store.records import (
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
)
from bot.store.sqlite.store import Store
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, WebhookTarget
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem

T = TypeVar("T")


class SqliteStore:
    """The embedded default: `bot.store.sqlite.store.Store` behind the asynchronous interface.

    The calls stay synchronous inside (a local SQLite transaction takes microseconds, less than a hop to a thread).
    Writes are committed in groups under load: the first write of a turn of the event loop is made at once, as a
    synchronous call; the writes asked for after it in the same turn run together at the start of the next one,
    each in a savepoint, under one commit, and each caller resumes only once that commit is done. With many asks
    and answers in flight that is one commit for many of them instead of one each, and while writes come several a
    turn the first of a turn joins the group too (one commit a turn); a write alone (a quiet bot, a test) is made
    at once as before. `durable()` then waits for the batched fsync.
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        """The synchronous store underneath, for tools and tests that read the file directly."""
        self._queued: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._wrote_this_turn = False
        self._busy = False  # the last group held several writes: under load the first write of a turn waits too

    async def _write(self, write: Callable[[], T]) -> T:
        """Run `write` (a call of one of the sync store's write methods) with the other writes of this turn.

        A write asked for is made even when its caller is cancelled before the group commits (the caller then sees
        the cancellation), as a synchronous call would have been: what was sent is still recorded.
        """
        loop = asyncio.get_running_loop()
        if not self._queued and not self._wrote_this_turn and not self._busy:
            self._wrote_this_turn = True
            loop.call_soon(self._next_turn)
            return write()
        future: asyncio.Future[T] = loop.create_future()
        self._queued.append((write, future))
        if len(self._queued) == 1:
            # The first write queued leads: it lets the others of this turn queue up, then commits them all.
            # (It yields rather than waiting on its future, so it never looks blocked while the commit is due.)
            try:
                await asyncio.sleep(0)
            except BaseException:
                self._flush()
                future.exception()  # its caller is gone: nobody else would retrieve a failure
                raise
            self._flush()
        return await future

    def _next_turn(self) -> None:
        self._wrote_this_turn = False

    def _flush(self) -> None:
        queued, self._queued = self._queued, []
        if not queued:  # flushed already (by `close`)
            return
        # While writes come several a turn, the first of the next turn joins their group too: one commit a turn
        # instead of two (a commit writes every page it touched, so it costs about as much for one write as for
        # ten). A write alone after a quiet spell is made at once again after one group of one.
        self._busy = len(queued) > 1
        if len(queued) == 1:  # alone: its own transaction, no savepoint
            write, future = queued[0]
            try:
                _settle(future, write(), None)
            except Exception as error:
                _settle(future, None, error)
            return
        try:
            outcomes = self.sync.write_together([write for write, _ in queued])
        except Exception as failure:  # the transaction failed: nothing of any of them was recorded
            outcomes = [(None, failure)] * len(queued)
        for (_, future), (result, error) in zip(queued, outcomes, strict=True):
            _settle(future, result, error)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SqliteStore:
        """Open (creating and migrating) the SQLite store at `path`; see `Store.open` for what it raises."""
        return cls(Store.open(path))

    @property
    def description(self) -> str:
        return self.sync.path

    @property
    def path(self) -> str:
        return self.sync.path

    async def schema_version(self) -> int:
        return self.sync.schema_version

    async def close(self) -> None:
        self._flush()  # writes asked for in this turn are still made
        self.sync.close()

    async def durable(self) -> None:
        await self.sync.durable()

    async def integrity_ok(self) -> bool:
        return self.sync.integrity_ok()

    async def create_question(self, record: QuestionRecord, delivery: NewDelivery | None = None) -> None:
        await self._write(lambda: self.sync.create_question(record, delivery))

    async def get_question(self, id: str) -> QuestionRecord | None:
        return self.sync.get_question(id)

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
        return self.sync.list_questions(
            status=status, agent_id=agent_id, channel=channel, limit=limit, offset=offset, newest_first=newest_first
        )

    async def count_questions(self, status: QuestionStatus | None = None, *, channel: str | None = None) -> int:
        return self.sync.count_questions(status, channel=channel)

    async def save_partial(
        self, id: str, item: AskUserQuestionAnswerItem, *, actor: str | None, channel: str
    ) -> QuestionRecord:
        return await self._write(lambda: self.sync.save_partial(id, item, actor=actor, channel=channel))

    async def add_approval(self, id: str, approval: Approval) -> tuple[QuestionRecord, bool]:
        return await self._write(lambda: self.sync.add_approval(id, approval))

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
        return await self._write(
            lambda: self.sync.resolve(
                id,
                status,
                answer=answer,
                by=by,
                via=via,
                error_code=error_code,
                error_message=error_message,
                seen=seen,
                learn=learn,
            )
        )

    async def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery:
        return await self._write(lambda: self.sync.add_delivery(question_id, channel, key, ref))

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        return await self._write(lambda: self.sync.remind(question_id, channel, next_at=next_at))

    async def note_on_delivery(self, question_id: str, channel: str, notes: dict[str, Any]) -> bool:
        return await self._write(lambda: self.sync.note_on_delivery(question_id, channel, notes))

    async def get_delivery(self, question_id: str, channel: str) -> Delivery | None:
        return self.sync.get_delivery(question_id, channel)

    async def has_delivery(self, question_id: str, channel: str) -> bool:
        return self.sync.has_delivery(question_id, channel)

    async def find_delivery(self, channel: str, key: str) -> Delivery | None:
        return self.sync.find_delivery(channel, key)

    async def find_delivery_with_question(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None:
        return self.sync.find_delivery_with_question(channel, key)

    async def deliveries(self, question_id: str) -> list[Delivery]:
        return self.sync.deliveries(question_id)

    async def audit(
        self,
        question_id: str,
        kind: AuditKind,
        *,
        channel: str | None = None,
        actor: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEvent:
        return await self._write(
            lambda: self.sync.audit(question_id, kind, channel=channel, actor=actor, detail=detail)
        )

    async def audit_rule(self, *, actor: str | None, detail: dict[str, Any]) -> AuditEvent:
        return await self._write(lambda: self.sync.audit_rule(actor=actor, detail=detail))

    async def learned_rules(self) -> list[LearnedRule]:
        return self.sync.learned_rules()

    async def learned_rule(self, id: str) -> LearnedRule | None:
        return self.sync.learned_rule(id)

    async def learn_rule(self, rule: LearnedRule) -> bool:
        return await self._write(lambda: self.sync.learn_rule(rule))

    async def forget_rule(self, id: str) -> bool:
        return await self._write(lambda: self.sync.forget_rule(id))

    async def keep_value(self, name: str, candidate: str) -> str:
        return await self._write(lambda: self.sync.keep_value(name, candidate))

    async def save_push_subscription(self, subscription: PushSubscription) -> None:
        await self._write(lambda: self.sync.save_push_subscription(subscription))

    async def delete_push_subscription(self, endpoint: str, *, person: str | None = None) -> bool:
        return await self._write(lambda: self.sync.delete_push_subscription(endpoint, person=person))

    async def list_push_subscriptions(self, persons: Collection[str] | None = None) -> list[PushSubscription]:
        return self.sync.list_push_subscriptions(persons)

    async def history(
        self,
        *,
        question_id: str | None = None,
        agent_id: str | None = None,
        kinds: Collection[AuditKind] | None = None,
        limit: int = 200,
        after_seq: int = 0,
    ) -> list[AuditEvent]:
        return self.sync.history(
            question_id=question_id, agent_id=agent_id, kinds=kinds, limit=limit, after_seq=after_seq
        )

    def subscribe_webhooks(self, targets: Sequence[WebhookTarget]) -> None:
        self.sync.webhooks = tuple(targets)

    async def claim_webhooks(self, urls: Sequence[str], *, lease_seconds: float, limit: int) -> list[WebhookDelivery]:
        return await self._write(lambda: self.sync.claim_webhooks(urls, lease_seconds=lease_seconds, limit=limit))

    async def finish_webhook(
        self, id: str, attempt: int, outcome: WebhookOutcome, *, retry_in: float | None = None, error: str | None = None
    ) -> bool:
        return await self._write(lambda: self.sync.finish_webhook(id, attempt, outcome, retry_in=retry_in, error=error))

    async def audit_rows(self, *, after_seq: int = 0, limit: int = 1000) -> list[ChainRow]:
        return self.sync.audit_rows(after_seq=after_seq, limit=limit)

    async def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool:
        return await self._write(lambda: self.sync.first_sight(channel, key, now=now))

    async def fire_once(self, question_id: str, name: str) -> bool:
        return await self._write(lambda: self.sync.fire_once(question_id, name))


def _settle(future: asyncio.Future[Any], result: Any, error: Exception | None) -> None:
    if future.cancelled():  # its caller was cancelled meanwhile; the write stands
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
