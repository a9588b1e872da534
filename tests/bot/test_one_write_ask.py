"""An API question whose first channel sends nothing out (the web inbox: its delivery is only a row) is stored with
that delivery in one write; the channel then only shows it. The waterfall means what it meant: only the first
channel that takes the agent's questions counts, and a channel that sends out still records its delivery after
sending."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from bot.api.remote import RemoteQuestions
from bot.channels.base import Sent, install_channel
from bot.channels.replies import APPROVALS_KEY, RESPONDERS_KEY
from bot.config import Subscription
from bot.questions.ledger import Ledger
from bot.questions.routing import Route, Router
from bot.questions.tasks import TaskBag
from bot.store.records import REMIND_AT_KEY, AgentRef, QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from core import AskUserQuestionItem
from tests.core.helpers import make_context

from .fakes import RecordingChannel, make_ledger, sync_store
from .store_backends import kinds_of

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem.model_validate({"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}]})


class ShowingChannel(RecordingChannel):
    """Like the web inbox: shows questions from the store, sends nothing out, keyed by the question's id."""

    sends_out = False

    def __init__(self, name: str, *, key_prefix: str = "") -> None:
        super().__init__(name)
        self.key_prefix = key_prefix
        """Set to deliver under another key than the one it promised (a channel's mistake)."""

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        await super().deliver(question, route)
        return Sent(key=f"{self.key_prefix}{question.id}")


class Api:
    """RemoteQuestions on channels installed in a given waterfall order, on a real SQLite file."""

    def __init__(self, ledger: Ledger, channels: list[RecordingChannel], subscriptions: dict[str, list[Subscription]]):
        self.ledger = ledger
        self.store = ledger.store
        assert isinstance(self.store, SqliteStore)
        self.ctx = make_context()
        router = Router([channel.name for channel in channels], subscriptions)
        self.channels = {channel.name: channel for channel in channels}
        for channel in channels:
            install_channel(self.ctx, channel, router, ledger)
        self.tasks = TaskBag()
        self.remote = RemoteQuestions(self.ctx, ledger, router, self.tasks)

    async def ask(self, agent: str = "deploy-1") -> QuestionRecord:
        return await self.remote.ask([QUESTION], AgentRef(id=agent))

    async def shown(self, question_id: str) -> None:
        """Wait until a channel holds the question (it has been shown)."""
        with anyio.fail_after(5):
            while (held := self.ledger.get(question_id)) is None or not held.holders:
                await anyio.sleep(0.01)


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    ledger, _ = make_ledger(tmp_path)
    yield ledger
    await ledger.store.close()


@pytest.fixture
async def api_rigs() -> AsyncIterator[list[Api]]:
    made: list[Api] = []
    yield made
    for api in made:
        api.ledger.close()
        await api.tasks.close()


def everyone(*names: str) -> dict[str, list[Subscription]]:
    return {name: [] for name in names}


async def test_an_ask_shown_first_by_a_channel_that_sends_nothing_out_is_one_commit(
    ledger: Ledger, api_rigs: list[Api]
) -> None:
    inbox = ShowingChannel("inbox")
    api = Api(ledger, [inbox], everyone("inbox"))
    api_rigs.append(api)
    commits = sync_store(ledger.store).commits
    record = await api.ask()
    await api.shown(record.id)
    assert sync_store(ledger.store).commits == commits + 1
    assert [question.id for question, _ in inbox.delivered] == [record.id]  # shown all the same
    assert await kinds_of(ledger.store, record.id) == ["asked", "delivered"]
    delivery = await ledger.store.find_delivery("inbox", record.id)
    assert delivery is not None and delivery.question_id == record.id
    assert delivery.ref == {RESPONDERS_KEY: [], APPROVALS_KEY: 1}


async def test_the_delivery_stored_with_the_question_keeps_who_may_answer_and_when_to_remind(
    ledger: Ledger, api_rigs: list[Api]
) -> None:
    every = timedelta(minutes=15)
    route = Subscription(responders=["alice"], approvals=2, remind_every=every)
    api = Api(ledger, [ShowingChannel("inbox")], {"inbox": [route]})
    api_rigs.append(api)
    asked_at = ledger.clock.now()
    record = await api.ask()
    await api.shown(record.id)
    delivery = await ledger.store.get_delivery(record.id, "inbox")
    assert delivery is not None
    assert delivery.ref == {RESPONDERS_KEY: ["alice"], APPROVALS_KEY: 2, REMIND_AT_KEY: (asked_at + every).isoformat()}


async def test_only_the_first_channel_that_takes_the_agent_counts(ledger: Ledger, api_rigs: list[Api]) -> None:
    chat, inbox = RecordingChannel("chat"), ShowingChannel("inbox")
    only_builders = [Subscription(agents=["build-*"])]
    api = Api(ledger, [chat, inbox], {"chat": only_builders, "inbox": []})
    api_rigs.append(api)
    passed_by_chat = await api.ask("deploy-1")
    taken_by_chat = await api.ask("build-1")
    await api.shown(passed_by_chat.id)
    await api.shown(taken_by_chat.id)
    assert await kinds_of(ledger.store, passed_by_chat.id) == ["asked", "delivered"]
    assert await ledger.store.get_delivery(passed_by_chat.id, "inbox") is not None
    assert await ledger.store.get_delivery(taken_by_chat.id, "inbox") is None  # the inbox comes second: not shown
    assert [question.id for question, _ in chat.delivered] == [taken_by_chat.id]


async def test_a_first_channel_that_sends_out_records_its_intent_and_then_its_delivery(
    ledger: Ledger, api_rigs: list[Api]
) -> None:
    chat, inbox = RecordingChannel("chat"), ShowingChannel("inbox")
    api = Api(ledger, [chat, inbox], everyone("chat", "inbox"))
    api_rigs.append(api)
    commits = sync_store(ledger.store).commits
    record = await api.ask()
    await api.shown(record.id)
    await chat.delivery_seen.wait()
    with anyio.fail_after(5):
        while await ledger.store.get_delivery(record.id, "chat") is None:
            await anyio.sleep(0.01)
    assert sync_store(ledger.store).commits == commits + 3  # the question, the intent, the delivery
    assert await kinds_of(ledger.store, record.id) == ["asked", "delivered"]
    assert await ledger.store.get_delivery(record.id, "inbox") is None
    assert inbox.delivered == []


async def test_a_channel_that_delivers_under_another_key_than_it_said_is_recorded_as_it_delivered(
    ledger: Ledger, api_rigs: list[Api]
) -> None:
    inbox = ShowingChannel("inbox", key_prefix="moved:")
    api = Api(ledger, [inbox], everyone("inbox"))
    api_rigs.append(api)
    record = await api.ask()
    await api.shown(record.id)
    with anyio.fail_after(5):
        while await ledger.store.find_delivery("inbox", f"moved:{record.id}") is None:
            await anyio.sleep(0.01)
    assert await ledger.store.find_delivery("inbox", record.id) is None


async def test_a_resumed_question_finds_its_delivery_and_is_not_delivered_again(tmp_path: Path) -> None:
    first, _ = make_ledger(tmp_path)
    api = Api(first, [ShowingChannel("inbox")], everyone("inbox"))
    record = await api.ask()
    await api.shown(record.id)
    first.close()
    await api.tasks.close()
    await first.store.close()
    again = Ledger(SqliteStore.open(tmp_path / "handraise.db"), first.clock)
    inbox = ShowingChannel("inbox")
    resumed = Api(again, [inbox], everyone("inbox"))
    try:
        assert resumed.remote.resume(await again.store.list_questions(status="pending")) == 1
        await resumed.shown(record.id)
        assert inbox.delivered == []
        assert await kinds_of(again.store, record.id) == ["asked", "delivered"]
    finally:
        again.close()
        await resumed.tasks.close()
        await again.store.close()
