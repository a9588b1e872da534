"""The Discord channel on a real seam and ledger, connected to the fake Discord's REST API and Gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from bot.channels.base import install_channel
from bot.discord.channel import DiscordChannel
from bot.discord.settings import DiscordSettings, DiscordSubscription
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.records import QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from core import (
    AbortSignal,
    Agent,
    AgentRegistry,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionService,
)
from tests.background_ask import Asked, ask_in_background
from tests.bot.fakes import sync_store
from tests.fake_clock import FakeClock

from .fake_discord import CHANNEL_ID, TOKEN, FakeDiscord, fake_discord, user

ALICE = user("1300000000000000011", "Alice")
BOB = user("1300000000000000012", "Bob")
MALLORY = user("1300000000000000066", "Mallory")
REVIEWERS = "1300000000000000077"
"""A role: Bob answers as one of its members."""


@dataclass
class Waits:
    """The client's sleeps, recorded instead of waited (a retry_after of 30 s takes no time in a test)."""

    seconds: list[float] = field(default_factory=list[float])

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await anyio.lowlevel.checkpoint()


@dataclass
class DiscordRig:
    fake: FakeDiscord
    channel: DiscordChannel
    ledger: Ledger
    clock: FakeClock
    ctx: Context
    tasks: TaskGroup
    agent: Agent
    waits: Waits

    def ask(
        self, *questions: AskUserQuestionItem, agent: Agent | bool | None = True, signal: AbortSignal | None = None
    ) -> Asked:
        chosen = self.agent if agent is True else None if agent is False else agent
        request = AskUserQuestionRequest(questions=list(questions), agent=chosen, signal=signal)
        return ask_in_background(self.tasks, self.ctx, request)

    async def sent(self, count: int = 1) -> str:
        """The id of the `count`-th question message the bot sent (one with controls), once it has been."""
        with anyio.fail_after(5):
            while len(asked := self.questions()) < count:
                await self.fake.wait_for("POST /channels", len(self.fake.calls_to("POST /channels")) + 1)
        return asked[count - 1]["id"]

    def questions(self) -> list[dict[str, Any]]:
        """The bot's question messages, in the order sent (parts, reminders and notices left out)."""
        messages = self.fake.messages.values()
        return [message for message in messages if message["author"].get("bot") and message["content"][:1] == "❓"]

    def message(self, message_id: str) -> dict[str, Any]:
        return self.fake.messages[message_id]

    def resume(self, record: QuestionRecord) -> Asked:
        agent = self.agent if record.agent is not None and record.agent.id == self.agent.id else None
        request = AskUserQuestionRequest(questions=record.questions, agent=agent)
        self.ledger.bind(request, record)
        return ask_in_background(self.tasks, self.ctx, request)

    def question_id(self) -> str:
        return sync_store(self.ledger.store).list_questions(limit=1)[0].id

    async def until(self, predicate: Any, seconds: float = 5) -> None:
        with anyio.fail_after(seconds):
            while not predicate():
                await anyio.sleep(0.005)


def subscription(**fields: Any) -> DiscordSubscription:
    return DiscordSubscription.model_validate({"channel": CHANNEL_ID} | fields)


@asynccontextmanager
async def discord_rig(
    tmp_path: Path, *subscriptions: DiscordSubscription, fake: FakeDiscord | None = None
) -> AsyncIterator[DiscordRig]:
    """The channel installed on a fresh seam and connected to `fake` (a new one unless given: give the same one to
    two rigs in turn to restart the bot)."""
    async with AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(fake_discord())
        started: list[DiscordRig] = []
        try:
            async with anyio.create_task_group() as tasks:
                rig = _start(fake, tasks, tmp_path, list(subscriptions))
                started.append(rig)
                tasks.start_soon(rig.channel.run)
                with anyio.fail_after(5):
                    await rig.channel.gateway.ready.wait()
                yield rig
                rig.ledger.close()
                tasks.cancel_scope.cancel()
        finally:
            for rig in started:
                await rig.channel.close()
                await rig.ledger.store.close()


def _start(fake: FakeDiscord, tasks: TaskGroup, tmp_path: Path, subscriptions: list[DiscordSubscription]) -> DiscordRig:
    default = subscription(responders=[ALICE["id"], f"role:{REVIEWERS}"])
    settings = DiscordSettings.model_validate(
        {"api_url": fake.url + "/api", "subscriptions": subscriptions or [default]}
    )
    waits = Waits()
    channel = DiscordChannel(settings, token=TOKEN, sleep=waits)
    clock = FakeClock()
    ledger = Ledger(SqliteStore.open(tmp_path / "handraise.db"), clock)
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    install_channel(ctx, channel, Router(["discord"], {"discord": settings.subscriptions}), ledger)
    agent = Agent("dc-deploy-7", name="deploy-bot")
    assert ctx.agents is not None
    ctx.agents.enter(agent)
    return DiscordRig(fake, channel, ledger, clock, ctx, tasks, agent, waits)
