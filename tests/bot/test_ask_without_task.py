"""A new API question whose first channel only waits (the web inbox on a route with no timers, approvals or outcome to
show) is shown and held with no task of its own; every other question still gets one. Either way an answer, a cancel
and a long poll behave the same, and a question whose showing fails is not left unshown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from bot.api.remote import RemoteQuestions
from bot.channels.base import Channel, Sent, install_channel
from bot.config import Subscription
from bot.questions.ledger import Ledger
from bot.questions.routing import Route, Router
from bot.questions.tasks import TaskBag
from bot.store.errors import StoreUnavailable
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem
from tests.core.helpers import make_context
from tests.fake_clock import FakeClock

from .fakes import make_ledger
from .store_backends import kinds_of

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem.model_validate({"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}]})
YES = {"go": AskUserQuestionAnswerItem(id="go", selected=["Yes"])}


class InboxLike(Channel):
    """Shows questions from the store like the web inbox: sends nothing out, shows no outcome. `failures` makes that
    many `deliver` calls fail first; `hang` makes the next one wait until it is cancelled."""

    sends_out = False

    def __init__(self, name: str = "inbox", *, failures: int = 0, hang: bool = False) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self.failures = failures
        self.hang = hang
        self.shown: list[str] = []

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        if self.hang:
            self.hang = False
            await anyio.sleep_forever()
        if self.failures:
            self.failures -= 1
            raise StoreUnavailable("the store cannot be read (a test)")
        self.shown.append(question.id)
        return Sent(key=question.id)


class Api:
    def __init__(self, ledger: Ledger, channel: InboxLike, route: Subscription | None = None) -> None:
        self.ledger = ledger
        self.ctx = make_context()
        router = Router([channel.name], {channel.name: [route] if route is not None else []})
        install_channel(self.ctx, channel, router, ledger)
        self.tasks = TaskBag()
        self.remote = RemoteQuestions(self.ctx, ledger, router, self.tasks, store_retry=0.01)

    async def ask(self) -> QuestionRecord:
        return await self.remote.ask([QUESTION], AgentRef(id="deploy-1"))


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[tuple[Ledger, FakeClock, list[Api]]]:
    ledger, clock = make_ledger(tmp_path)
    made: list[Api] = []
    yield ledger, clock, made
    ledger.close()
    for api in made:
        await api.tasks.close()
    await ledger.store.close()


async def test_a_question_that_only_waits_is_shown_and_held_with_no_task(
    rig: tuple[Ledger, FakeClock, list[Api]],
) -> None:
    ledger, _, made = rig
    inbox = InboxLike()
    api = Api(ledger, inbox)
    made.append(api)
    record = await api.ask()
    assert inbox.shown == [record.id]  # shown before the ask returned
    assert len(api.tasks) == 0
    held = ledger.get(record.id)
    assert held is not None and held.record is record
    assert await kinds_of(ledger.store, record.id) == ["asked", "delivered"]


async def test_its_answer_wakes_a_long_poll_and_it_is_then_let_go(rig: tuple[Ledger, FakeClock, list[Api]]) -> None:
    ledger, _, made = rig
    api = Api(ledger, InboxLike())
    made.append(api)
    record = await api.ask()
    outcome: list[QuestionRecord] = []

    async def long_poll() -> None:
        outcome.append(await ledger.wait(record.id, 10))

    async with anyio.create_task_group() as group:
        group.start_soon(long_poll)
        await anyio.sleep(0.05)
        assert outcome == []  # it waits: the question is held here
        resolution = await ledger.submit(record.id, YES, by="alice", via="inbox")
        assert resolution.won
    assert outcome[0].status == "answered" and outcome[0].answered_by == "alice"
    assert ledger.get(record.id) is None
    assert not (await ledger.submit(record.id, YES, by="bob", via="inbox")).won  # answered once


async def test_a_cancel_ends_it_like_any_other(rig: tuple[Ledger, FakeClock, list[Api]]) -> None:
    ledger, _, made = rig
    api = Api(ledger, InboxLike())
    made.append(api)
    record = await api.ask()
    assert (await api.remote.cancel(record.id, by="api")).won
    stored = await ledger.store.get_question(record.id)
    assert stored is not None and stored.status == "cancelled"
    assert ledger.get(record.id) is None


@pytest.mark.parametrize(
    "route",
    [
        Subscription(expire_after=timedelta(minutes=5)),
        Subscription(escalate_after=timedelta(minutes=5)),
        Subscription(remind_every=timedelta(minutes=5)),
        Subscription(approvals=2),
    ],
    ids=["expiry", "escalation", "reminders", "approvals"],
)
async def test_a_route_with_something_to_do_meanwhile_keeps_its_task(
    rig: tuple[Ledger, FakeClock, list[Api]], route: Subscription
) -> None:
    ledger, _, made = rig
    api = Api(ledger, InboxLike(), route)
    made.append(api)
    await api.ask()
    assert len(api.tasks) == 1


async def test_an_expiry_still_ends_the_question(rig: tuple[Ledger, FakeClock, list[Api]]) -> None:
    ledger, clock, made = rig
    api = Api(ledger, InboxLike(), Subscription(expire_after=timedelta(minutes=5)))
    made.append(api)
    record = await api.ask()
    with anyio.fail_after(5):
        while (held := ledger.get(record.id)) is None or not held.holders:
            await anyio.sleep(0.01)
        await clock.advance(timedelta(minutes=6))
        expired = await ledger.wait(record.id, 5)
    assert expired.status == "expired"


async def test_a_showing_that_fails_is_done_again_by_a_task(rig: tuple[Ledger, FakeClock, list[Api]]) -> None:
    ledger, _, made = rig
    inbox = InboxLike(failures=1)
    api = Api(ledger, inbox)
    made.append(api)
    record = await api.ask()  # acknowledged: the question is stored, whatever showing it did
    with anyio.fail_after(5):
        while inbox.shown != [record.id]:
            await anyio.sleep(0.01)
    assert await kinds_of(ledger.store, record.id) == ["asked", "delivered"]  # shown where it was stored, once
    assert (await ledger.submit(record.id, YES, by="alice", via="inbox")).won


async def test_a_cancelled_ask_still_gets_its_question_shown(rig: tuple[Ledger, FakeClock, list[Api]]) -> None:
    ledger, _, made = rig
    inbox = InboxLike(hang=True)
    api = Api(ledger, inbox)
    made.append(api)
    with anyio.move_on_after(0.2):
        await api.ask()
    pending = await ledger.store.list_questions(status="pending")
    assert len(pending) == 1
    with anyio.fail_after(5):
        while inbox.shown != [pending[0].id]:
            await anyio.sleep(0.01)
