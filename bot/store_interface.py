"""The store as the program sees it: one asynchronous interface, two backends.

`SqliteStore` (the embedded default, one machine) wraps the synchronous `bot.store.Store`; a PostgreSQL backend
serves several `handraise serve` replicas on one database. Both pass the same contract tests
(`tests/bot/test_store_contract.py`), so the ledger, the channels and the API never ask which one they hold.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from datetime import datetime
from typing import Any, Protocol

from bot.records import Approval, AuditEvent, AuditKind, Delivery, QuestionRecord, QuestionStatus, Resolution
from bot.store import Store
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem


class AsyncStore(Protocol):
    """Pending questions, their deliveries, answers and the audit log. Every write is one transaction, committed
    before the call returns; `durable()` waits until it would survive a power loss. The methods' contracts are
    those of `bot.store.Store`, whose docstrings say them once."""

    @property
    def description(self) -> str:
        """Where the store is, for messages: a file path, or `PostgreSQL at host:port/db` (never a password)."""
        ...

    async def schema_version(self) -> int: ...

    async def close(self) -> None: ...

    async def durable(self) -> None: ...

    async def integrity_ok(self) -> bool: ...

    async def create_question(self, record: QuestionRecord) -> None: ...

    async def get_question(self, id: str) -> QuestionRecord | None: ...

    async def list_questions(
        self,
        *,
        status: QuestionStatus | None = None,
        agent_id: str | None = None,
        channel: str | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[QuestionRecord]: ...

    async def count_questions(self, status: QuestionStatus | None = None, *, channel: str | None = None) -> int: ...

    async def save_partial(
        self, id: str, item: AskUserQuestionAnswerItem, *, actor: str | None, channel: str
    ) -> QuestionRecord: ...

    async def add_approval(self, id: str, approval: Approval) -> tuple[QuestionRecord, bool]: ...

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
    ) -> Resolution: ...

    async def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery: ...

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None: ...

    async def get_delivery(self, question_id: str, channel: str) -> Delivery | None: ...

    async def has_delivery(self, question_id: str, channel: str) -> bool: ...

    async def find_delivery(self, channel: str, key: str) -> Delivery | None: ...

    async def deliveries(self, question_id: str) -> list[Delivery]: ...

    async def audit(
        self,
        question_id: str,
        kind: AuditKind,
        *,
        channel: str | None = None,
        actor: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEvent: ...

    async def history(
        self,
        *,
        question_id: str | None = None,
        agent_id: str | None = None,
        kinds: Collection[AuditKind] | None = None,
        limit: int = 200,
        after_seq: int = 0,
    ) -> list[AuditEvent]: ...

    async def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool: ...

    async def fire_once(self, question_id: str, name: str) -> bool: ...


class SqliteStore:
    """The embedded default: `bot.store.Store` behind the asynchronous interface.

    The calls stay synchronous inside (a local SQLite transaction takes microseconds, less than a hop to a thread);
    only `durable()` waits, for the batched fsync.
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        """The synchronous store underneath, for tools and tests that read the file directly."""

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
        self.sync.close()

    async def durable(self) -> None:
        await self.sync.durable()

    async def integrity_ok(self) -> bool:
        return self.sync.integrity_ok()

    async def create_question(self, record: QuestionRecord) -> None:
        self.sync.create_question(record)

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
        return self.sync.save_partial(id, item, actor=actor, channel=channel)

    async def add_approval(self, id: str, approval: Approval) -> tuple[QuestionRecord, bool]:
        return self.sync.add_approval(id, approval)

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
    ) -> Resolution:
        return self.sync.resolve(
            id,
            status,
            answer=answer,
            by=by,
            via=via,
            error_code=error_code,
            error_message=error_message,
            seen=seen,
        )

    async def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery:
        return self.sync.add_delivery(question_id, channel, key, ref)

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        return self.sync.remind(question_id, channel, next_at=next_at)

    async def get_delivery(self, question_id: str, channel: str) -> Delivery | None:
        return self.sync.get_delivery(question_id, channel)

    async def has_delivery(self, question_id: str, channel: str) -> bool:
        return self.sync.has_delivery(question_id, channel)

    async def find_delivery(self, channel: str, key: str) -> Delivery | None:
        return self.sync.find_delivery(channel, key)

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
        return self.sync.audit(question_id, kind, channel=channel, actor=actor, detail=detail)

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

    async def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool:
        return self.sync.first_sight(channel, key, now=now)

    async def fire_once(self, question_id: str, name: str) -> bool:
        return self.sync.fire_once(question_id, name)
