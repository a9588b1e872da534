"""Events that beat their question's recording: a click within milliseconds of the post is waited for and acted
on, never dropped; one that still matches nothing is logged once and the person is asked to try again. Tested once
here, on the shared base with a recording channel; Slack and Telegram test it again through their fakes."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup

from bot.channels.base import Sent, install_channel
from bot.channels.in_flight import DeliveriesInFlight
from bot.channels.replies import Accepted, Answer, Ended, Outcome, Unmatched
from bot.config import Subscription
from bot.questions.routing import Route, Router
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionRequest
from tests.core.helpers import make_context

from .fakes import RecordingChannel, make_ledger, sync_store

pytestmark = pytest.mark.anyio

DEPLOY = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
)


def yes(record: QuestionRecord, delivery: Delivery) -> Answer:
    return Answer({"deploy": AskUserQuestionAnswerItem(id="deploy", selected=["Yes"])})


async def until(predicate: object, seconds: float = 5) -> None:
    with anyio.fail_after(seconds):
        while not predicate():  # type: ignore[operator]
            await anyio.sleep(0.001)


class QuickClicks(RecordingChannel):
    """A channel whose person clicks the moment the post appears: before `deliver` has returned, so before the base
    has recorded the delivery."""

    def __init__(self, tasks: TaskGroup) -> None:
        super().__init__("chat")
        self.tasks = tasks
        self.outcomes: list[Outcome] = []

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        sent = await super().deliver(question, route)
        self.tasks.start_soon(self.click, sent.key)
        await until(lambda: self.replies.awaiting == 1)  # the click found nothing yet, and waits
        return sent

    async def click(self, key: str) -> None:
        self.outcomes.append(await self.replies.answer(key, by="U0ALICE", how="click", read=yes))


async def test_a_click_before_the_delivery_is_recorded_waits_for_it_and_answers_the_agent(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    ctx = make_context()
    assert ctx.user_questions is not None
    async with anyio.create_task_group() as tasks:
        channel = QuickClicks(tasks)
        install_channel(ctx, channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
        answer = await ctx.user_questions.ask(AskUserQuestionRequest(questions=[DEPLOY]))
        assert answer.answers[0].selected == ["Yes"]
        (outcome,) = channel.outcomes
        assert isinstance(outcome, Accepted) and outcome.record.answered_by == "U0ALICE"


async def test_a_click_matching_no_delivery_is_logged_once_and_unmatched_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger, _ = make_ledger(tmp_path)
    channel = RecordingChannel("chat")
    install_channel(make_context(), channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
    with caplog.at_level(logging.WARNING), anyio.fail_after(1):  # nothing in flight: nothing to wait for
        outcome = await channel.replies.answer("C1:1700000000.1\nforged", by="U0A", how="click", read=yes)
    assert outcome == Unmatched(None, "click", "C1:1700000000.1\nforged")
    assert isinstance(outcome, Ended) and isinstance(outcome, Unmatched)  # channels that show only Ended still work
    assert outcome.notice.endswith("try again in a moment.")
    (line,) = caplog.messages
    assert line.startswith("chat: a click on 'C1:1700000000.1\\nforged' matched no question")  # one line, quoted


async def test_a_click_waits_only_a_while_for_a_delivery_that_never_comes(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    channel = RecordingChannel("chat")
    install_channel(make_context(), channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
    channel.replies.recording_wait = 0.05
    channel.replies.in_flight.begin()  # a delivery that hangs
    outcome = await channel.replies.answer("chat:q_gone", by="U0A", how="click", read=yes)
    assert isinstance(outcome, Unmatched)
    assert channel.replies.awaiting == 0


async def test_an_event_that_may_be_about_anything_is_not_held_up(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    channel = RecordingChannel("chat")
    install_channel(make_context(), channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
    channel.replies.in_flight.begin()
    with anyio.fail_after(1):
        outcome = await channel.replies.answer("chat:notice", by="U0A", how="reply", read=yes, expected=False)
    assert outcome == Ended(None) and not isinstance(outcome, Unmatched)


async def test_with_replicas_a_click_finds_the_delivery_another_process_records(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    channel = RecordingChannel("chat")
    install_channel(make_context(), channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
    ledger.following = True  # a change feed runs: another replica may be the one delivering
    record = QuestionRecord(questions=[DEPLOY])
    sync_store(ledger.store).create_question(record)
    outcomes: list[Outcome] = []
    async with anyio.create_task_group() as tasks:

        async def click() -> None:
            outcomes.append(await channel.replies.answer("chat:elsewhere", by="U0A", how="click", read=yes))

        tasks.start_soon(click)
        await until(lambda: channel.replies.awaiting == 1)
        sync_store(ledger.store).add_delivery(record.id, "chat", "chat:elsewhere", {})  # the other replica records
    (outcome,) = outcomes
    assert isinstance(outcome, Accepted) and outcome.record.id == record.id


async def test_a_thread_reply_waits_for_the_deliveries_in_flight_when_it_came(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    channel = RecordingChannel("chat")
    install_channel(make_context(), channel, Router(["chat"], {"chat": [Subscription()]}), ledger)
    in_flight = channel.replies.in_flight
    first = in_flight.begin()
    done = anyio.Event()
    async with anyio.create_task_group() as tasks:

        async def reply() -> None:
            await channel.replies.recorded()
            done.set()

        tasks.start_soon(reply)
        await until(lambda: channel.replies.awaiting == 1)
        in_flight.begin()  # a later delivery, begun after the reply came: not waited for
        assert not done.is_set()
        in_flight.end(first)
    assert done.is_set()


async def test_deliveries_in_flight_are_waited_for_in_the_order_they_began() -> None:
    in_flight = DeliveriesInFlight()
    assert in_flight.newest() is None
    first, second = in_flight.begin(), in_flight.begin()
    assert in_flight.newest() == second
    in_flight.end(second)
    with anyio.move_on_after(0.01) as waited:
        await in_flight.ended(second)  # the first is still open
    assert waited.cancelled_caught
    in_flight.end(first)
    in_flight.end(first)  # ending twice is harmless
    with anyio.fail_after(1):
        await in_flight.ended(second)
    assert in_flight.newest() is None
