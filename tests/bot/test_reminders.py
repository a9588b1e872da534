"""Reminders on unanswered questions: on the route's interval, at most `remind_max`, never after the question ends,
durable across a restart, and in the audit log. Driven by the fake clock: no real waits."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.channels.base import install_channel
from bot.questions.routing import Route, Router
from bot.settings.tables import Subscription
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionRequest
from tests.core.helpers import make_context
from tests.fake_clock import FakeClock

from .fakes import RecordingChannel, make_ledger

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem(id="go", question="Go?")
EVERY = timedelta(minutes=15)


class RemindedChannel(RecordingChannel):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.reminded: list[int] = []

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        self.reminded.append(question.reminders)


def setup(tmp_path: Path, **subscription: Any) -> tuple[Any, FakeClock, RemindedChannel, Any]:
    ledger, clock = make_ledger(tmp_path)
    channel = RemindedChannel("chat")
    router = Router(["chat"], {"chat": [Subscription(remind_every=EVERY, **subscription)]})
    ctx = make_context()
    install_channel(ctx, channel, router, ledger)
    return ledger, clock, channel, ctx


async def ask(ctx: Any, request: AskUserQuestionRequest | None = None) -> None:
    assert ctx.user_questions is not None
    await ctx.user_questions.ask(request or AskUserQuestionRequest(questions=[QUESTION]))


async def answer(ledger: Any) -> None:
    (record,) = await ledger.store.list_questions()
    await ledger.submit(record.id, {"go": AskUserQuestionAnswerItem(id="go", custom="yes")}, by="ann", via="chat")


async def test_reminders_come_every_interval_up_to_the_maximum(tmp_path: Path) -> None:
    ledger, clock, channel, ctx = setup(tmp_path, remind_max=2)
    async with anyio.create_task_group() as group:
        group.start_soon(ask, ctx)
        await channel.delivery_seen.wait()
        await clock.advance(EVERY - timedelta(seconds=1))
        assert channel.reminded == []
        await clock.advance(timedelta(seconds=1))
        assert channel.reminded == [1]
        await clock.advance(EVERY)
        await clock.advance(EVERY)
        assert channel.reminded == [1, 2]
        await answer(ledger)
    reminded = await ledger.store.history(kinds=["reminded"])
    assert [(event.channel, event.detail["count"]) for event in reminded] == [("chat", 1), ("chat", 2)]


async def asked_and_answered(ledger: Any, channel: RemindedChannel, ctx: Any) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(ask, ctx)
        await channel.delivery_seen.wait()
        await answer(ledger)


async def test_no_reminder_comes_after_the_question_ends(tmp_path: Path) -> None:
    ledger, clock, channel, ctx = setup(tmp_path)
    await asked_and_answered(ledger, channel, ctx)
    await clock.advance(EVERY * 3)
    assert channel.reminded == []
    assert await ledger.store.history(kinds=["reminded"]) == []


async def test_the_store_refuses_a_reminder_for_an_ended_question(tmp_path: Path) -> None:
    ledger, clock, channel, ctx = setup(tmp_path)
    await asked_and_answered(ledger, channel, ctx)
    (record,) = await ledger.store.list_questions()
    assert await ledger.store.remind(record.id, "chat", next_at=clock.now()) is None


async def test_after_a_restart_the_next_reminder_keeps_its_time_and_count(tmp_path: Path) -> None:
    ledger, clock, channel, ctx = setup(tmp_path, remind_max=3)
    record = QuestionRecord(questions=[QUESTION], origin="api", created_at=clock.now())
    await ledger.store.create_question(record)
    due = clock.now() + timedelta(minutes=5)
    ref = {"remind_at": due.isoformat(), "reminded": 2}
    await ledger.store.add_delivery(record.id, "chat", "K1", ref)  # as the previous run left it
    request = AskUserQuestionRequest(questions=[QUESTION])
    ledger.bind(request, record)
    async with anyio.create_task_group() as group:
        group.start_soon(ask, ctx, request)
        await anyio.wait_all_tasks_blocked()
        await clock.advance(timedelta(minutes=4))
        assert channel.reminded == []
        await clock.advance(timedelta(minutes=1))
        assert channel.reminded == [1]
        await clock.advance(EVERY * 2)
        assert channel.reminded == [1]  # the third and last one was this run's first
        await answer(ledger)
    assert channel.delivered == []  # resumed, not sent again
    delivery = await ledger.store.get_delivery(record.id, "chat")
    assert delivery is not None and delivery.ref["reminded"] == 3


async def test_the_inbox_hears_of_each_reminder(tmp_path: Path) -> None:
    ledger, clock, channel, ctx = setup(tmp_path)
    heard: list[tuple[str, int]] = []

    async def hear(kind: str, record: QuestionRecord) -> None:
        heard.append((kind, record.reminders))

    ledger.watch(hear)
    async with anyio.create_task_group() as group:
        group.start_soon(ask, ctx)
        await channel.delivery_seen.wait()
        await clock.advance(EVERY)
        await answer(ledger)
    assert ("partial", 1) in heard
