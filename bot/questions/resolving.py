"""Ending a question, by a human's answer or without one (cancelled, expired, failed): the store decides which end
comes first, and only that one wakes the holders here and reaches watchers."""

from __future__ import annotations

import time
from collections.abc import Mapping

from bot.permissions.rules import rule_learned_by
from bot.questions.announcing import Announcer
from bot.questions.answers import normalise_answer
from bot.questions.lookup import QuestionLookup
from bot.questions.observer import NoObserver, QuestionObserver
from bot.questions.pending import HeldQuestions
from bot.store.interface import AsyncStore
from bot.store.records import QuestionRecord, QuestionStatus, Resolution
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem


class Resolver:
    """Submits answers and ends questions, committed to the store before anyone is told."""

    def __init__(self, store: AsyncStore, held: HeldQuestions, lookup: QuestionLookup, announcer: Announcer) -> None:
        self._store = store
        self._held = held
        self._lookup = lookup
        self._announcer = announcer
        self.observer: QuestionObserver = NoObserver()
        """Told of every end this process wins (`Ledger.observer`)."""

    async def submit(
        self,
        question_id: str,
        items: Mapping[str, AskUserQuestionAnswerItem] | AskUserQuestionAnswer,
        *,
        by: str | None,
        via: str,
        record: QuestionRecord | None = None,
    ) -> Resolution:
        """Record a human's answer if the question is still pending; the first one wins.

        `record` is the question as the caller has just read it, if it has (its questions never change; the store
        re-reads the status inside the write). Raises UnknownQuestion, or AnswerError when the answer does not fit
        the questions (nothing is recorded). "Always allow" on a coding agent's permission prompt stores the rule it
        teaches in the same commit as the answer, so that the agent's next identical request finds it.
        """
        if record is None:
            record = await self._lookup.existing(question_id)
        if isinstance(items, AskUserQuestionAnswer):
            items = {item.id: item for item in items.answers}
        answer = normalise_answer(record.questions, items)
        fields: dict[str, object] = {"answer": answer, "by": by, "via": via, "seen": record}
        if (learn := rule_learned_by(record, answer, by)) is not None:
            fields["learn"] = learn
        return await self._end(question_id, "answered", known=True, **fields)

    async def resolve(
        self,
        question_id: str,
        status: QuestionStatus,
        *,
        code: str,
        message: str,
        by: str | None = None,
        via: str | None = None,
    ) -> Resolution:
        """End a question without an answer (cancelled, expired, failed) unless something already ended it."""
        return await self._end(question_id, status, error_code=code, error_message=message, by=by, via=via)

    async def _end(
        self, question_id: str, status: QuestionStatus, *, known: bool = False, **fields: object
    ) -> Resolution:
        if not known:
            await self._lookup.existing(question_id)  # UnknownQuestion rather than the store's error for a forged id
        started = time.perf_counter()
        resolution = await self._store.resolve(question_id, status, **fields)  # type: ignore[arg-type]
        if resolution.won:
            self.observer.resolved(resolution.record, time.perf_counter() - started)
            pending = self._held.get(question_id)
            if pending is not None:
                self._held.settle(pending, resolution.record)
            await self._announcer.announce("resolved", resolution.record)
        return resolution
