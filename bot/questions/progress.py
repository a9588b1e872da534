"""A question moving on without ending yet: one answer of several kept, one approval counted, one reminder sent.

The last partial answer or the `needed`-th approval completes it, through the same first-answer-wins submit as any
other answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.questions.announcing import Announcer
from bot.questions.answers import normalise_item
from bot.questions.approvals import approvers
from bot.questions.lookup import QuestionLookup, UnknownQuestion
from bot.questions.pending import HeldQuestions
from bot.questions.resolving import Resolver
from bot.store.interface import AsyncStore
from bot.store.records import Approval, QuestionRecord, Resolution
from core import AskUserQuestionAnswerItem


@dataclass(frozen=True)
class PartialResult:
    """What `Ledger.save_partial` did: `record` is the question now, `resolution` is set when it completed it."""

    record: QuestionRecord
    resolution: Resolution | None


@dataclass(frozen=True)
class ApprovalResult:
    """What `Ledger.approve` did: `counted` is False for a second approval by the same person; `resolution` is set
    once the approvals completed the question (or it had ended before)."""

    record: QuestionRecord
    counted: bool
    resolution: Resolution | None


class Progress:
    """Partial answers, approvals and reminders, stored first, then told to holders and watchers."""

    def __init__(
        self, store: AsyncStore, held: HeldQuestions, lookup: QuestionLookup, announcer: Announcer, resolver: Resolver
    ) -> None:
        self._store = store
        self._held = held
        self._lookup = lookup
        self._announcer = announcer
        self._resolver = resolver

    async def save_partial(
        self, question_id: str, item: AskUserQuestionAnswerItem, *, by: str | None, via: str
    ) -> PartialResult:
        """Keep the answer to one question of several; when every question has one, the whole answer is submitted."""
        record = await self._lookup.existing(question_id)
        question = next((q for q in record.questions if q.id == item.id), None)
        if question is None:
            raise UnknownQuestion(f"question {question_id} has no question {item.id}")
        record = await self._store.save_partial(question_id, normalise_item(question, item), actor=by, channel=via)
        if record.status != "pending":
            return PartialResult(record, Resolution(won=False, record=record))
        if (pending := self._held.get(question_id)) is not None:
            pending.record = record  # without waking its followers: they follow approvals and reminders
        await self._announcer.announce("partial", record)
        if all(q.id in record.partial for q in record.questions):
            resolution = await self._resolver.submit(question_id, dict(record.partial), by=by, via=via)
            return PartialResult(record, resolution)
        return PartialResult(record, None)

    async def approve(
        self, question_id: str, item: AskUserQuestionAnswerItem, *, by: str, via: str, identity: str, needed: int
    ) -> ApprovalResult:
        """Count one person's approval; the `needed`-th different one answers the question with `item`, naming
        everyone who approved. Raises UnknownQuestion."""
        await self._lookup.existing(question_id)
        record, counted = await self._store.add_approval(question_id, Approval(by=by, via=via, identity=identity))
        if record.status != "pending":
            return ApprovalResult(record, counted, Resolution(won=False, record=record))
        if counted:
            if (pending := self._held.get(question_id)) is not None:
                pending.touch(record)
            await self._announcer.announce("partial", record)
        if len(record.approvals) < needed:
            return ApprovalResult(record, counted, None)
        resolution = await self._resolver.submit(question_id, {item.id: item}, by=approvers(record), via=via)
        return ApprovalResult(resolution.record, counted, resolution)

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        """Record one reminder on `channel` (None when the question has ended: no reminder then); watchers hear of
        it, so the inbox can mark the question."""
        record = await self._store.remind(question_id, channel, next_at=next_at)
        if record is not None:
            if (pending := self._held.get(question_id)) is not None:
                pending.touch(record)
            await self._announcer.announce("partial", record)
        return record
