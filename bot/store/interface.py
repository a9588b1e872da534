"""The store as the program sees it: one asynchronous interface, two backends.

`SqliteStore` (`bot.store.sqlite.async_store`, the embedded default, one machine) wraps the synchronous
`bot.store.sqlite.store.Store`; a PostgreSQL backend serves several `handraise serve` replicas on one database. Both
pass the same contract tests (`tests/bot/test_store_contract.py`), so the ledger, the channels and the API never ask
which one they hold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

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
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, WebhookTarget
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem


class AsyncStore(Protocol):
    """Pending questions, their deliveries, answers, the audit log and the rules "Always allow" learned. Every write
    is one transaction, committed before the call returns; `durable()` waits until it would survive a power loss. The
    methods' contracts are those of `bot.store.sqlite.store.Store`, whose docstrings say them once."""

    @property
    def description(self) -> str:
        """Where the store is, for messages: a file path, or `PostgreSQL at host:port/db` (never a password)."""
        ...

    async def schema_version(self) -> int: ...

    async def close(self) -> None: ...

    async def durable(self) -> None: ...

    async def integrity_ok(self) -> bool: ...

    async def create_question(self, record: QuestionRecord, delivery: NewDelivery | None = None) -> None: ...

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
        learn: LearnedRule | None = None,
    ) -> Resolution: ...

    async def add_delivery(self, question_id: str, channel: str, key: str, ref: dict[str, Any]) -> Delivery: ...

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None: ...

    async def note_on_delivery(self, question_id: str, channel: str, notes: dict[str, Any]) -> bool:
        """Merge `notes` into the delivery's `ref` while the question is pending: a channel's state between two
        events (a multi-select pick awaiting Submit) that must outlive a restart. No audit line (nothing was
        decided). False, and nothing kept, once the question is not pending or has no delivery on `channel`."""
        ...

    async def get_delivery(self, question_id: str, channel: str) -> Delivery | None: ...

    async def has_delivery(self, question_id: str, channel: str) -> bool: ...

    async def find_delivery(self, channel: str, key: str) -> Delivery | None: ...

    async def find_delivery_with_question(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None: ...

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

    async def audit_rule(self, *, actor: str | None, detail: dict[str, Any]) -> AuditEvent: ...

    async def learned_rules(self) -> list[LearnedRule]: ...

    async def learned_rule(self, id: str) -> LearnedRule | None: ...

    async def learn_rule(self, rule: LearnedRule) -> bool: ...

    async def forget_rule(self, id: str) -> bool: ...

    async def keep_value(self, name: str, candidate: str) -> str:
        """The value kept under `name` (a secret made once, such as the session key): `candidate` is stored when
        there is none yet; when several processes race, the first write wins and all of them get its value."""
        ...

    async def save_push_subscription(self, subscription: PushSubscription) -> None:
        """Store a browser's Web Push subscription; the same endpoint again replaces its keys and owner."""
        ...

    async def delete_push_subscription(self, endpoint: str, *, person: str | None = None) -> bool:
        """Remove the device's subscription (only if it is `person`'s, when given); True when one went."""
        ...

    async def list_push_subscriptions(self, persons: Collection[str] | None = None) -> list[PushSubscription]:
        """Every Web Push subscription, or those of `persons` (emails), oldest first."""
        ...

    async def history(
        self,
        *,
        question_id: str | None = None,
        agent_id: str | None = None,
        kinds: Collection[AuditKind] | None = None,
        limit: int = 200,
        after_seq: int = 0,
    ) -> list[AuditEvent]: ...

    def subscribe_webhooks(self, targets: Sequence[WebhookTarget]) -> None:
        """From now on, queue a delivery to each of `targets` with every ask or resolution of an event it wants, in
        that write's transaction."""
        ...

    async def claim_webhooks(
        self, urls: Sequence[str], *, lease_seconds: float, limit: int
    ) -> list[WebhookDelivery]: ...

    async def finish_webhook(
        self, id: str, attempt: int, outcome: WebhookOutcome, *, retry_in: float | None = None, error: str | None = None
    ) -> bool: ...

    async def audit_rows(self, *, after_seq: int = 0, limit: int = 1000) -> list[ChainRow]: ...

    async def first_sight(self, channel: str, key: str, *, now: datetime | None = None) -> bool: ...

    async def fire_once(self, question_id: str, name: str) -> bool: ...
