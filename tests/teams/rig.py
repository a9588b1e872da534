"""The Teams channel on a real seam and ledger, its `/teams/messages` served on a free loopback port, posting to
the local Teams (whose people post back to it with tokens from the local identity provider)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from aiohttp import web
from anyio.abc import TaskGroup

from bot.channels.base import install_channel
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.records import QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from bot.teams.channel import TeamsChannel
from bot.teams.incoming import MESSAGES_PATH
from bot.teams.settings import TeamsSettings, TeamsSubscription
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

from .fake_teams import APP_ID, APP_PASSWORD, CONVERSATION, TENANT, FakeTeams, fake_teams

ENVIRON = {"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": APP_PASSWORD}


@dataclass
class Waits:
    """The connector's Retry-After waits, recorded instead of waited."""

    seconds: list[float] = field(default_factory=list[float])

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await anyio.lowlevel.checkpoint()


@dataclass
class TeamsRig:
    fake: FakeTeams
    channel: TeamsChannel
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

    async def posted(self, count: int = 1) -> str:
        """The activity id of the `count`-th card posted, once it has been."""
        await self.fake.wait_for("POST", count)
        ids = [activity_id for activity_id, activity in self.fake.activities.items() if activity.get("attachments")]
        return ids[count - 1]

    def resume(self, record: QuestionRecord) -> Asked:
        agent = self.agent if record.agent is not None and record.agent.id == self.agent.id else None
        request = AskUserQuestionRequest(questions=record.questions, agent=agent)
        self.ledger.bind(request, record)
        return ask_in_background(self.tasks, self.ctx, request)

    def question_id(self) -> str:
        return sync_store(self.ledger.store).list_questions(limit=1)[0].id


def subscription(**fields: Any) -> TeamsSubscription:
    return TeamsSubscription.model_validate({"conversation": CONVERSATION, "service_url": "http://x/amer/"} | fields)


@asynccontextmanager
async def teams_rig(
    tmp_path: Path, *subscriptions: dict[str, Any], fake: FakeTeams | None = None, **settings: Any
) -> AsyncIterator[TeamsRig]:
    """The channel installed on a fresh seam (a store in `tmp_path`: give the same path and `fake` to two rigs in
    turn to restart the bot)."""
    async with AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(fake_teams())
        entries = [{"conversation": CONVERSATION, "service_url": fake.service_url} | s for s in subscriptions or [{}]]
        model = TeamsSettings.model_validate(
            {
                "tenant_id": TENANT,
                "openid_metadata_url": fake.identity.metadata_url,
                "token_url": fake.token_url,
                "conversations_file": str(tmp_path / "teams-conversations.json"),
                "subscriptions": entries,
            }
            | settings
        )
        waits = Waits()
        channel = TeamsChannel(model, environ=ENVIRON, sleep=waits)
        clock = FakeClock()
        ledger = Ledger(SqliteStore.open(tmp_path / "handraise.db"), clock)
        ctx = Context()
        ctx.plugin(AgentRegistry)
        ctx.plugin(UserQuestionService)
        install_channel(ctx, channel, Router(["teams"], {"teams": model.subscriptions}), ledger)
        agent = Agent("deploy-7", name="deploy-bot")
        assert ctx.agents is not None
        ctx.agents.enter(agent)
        app = web.Application()
        channel.add_routes(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        fake.bot_url = f"http://{host}:{port}{MESSAGES_PATH}"
        try:
            async with anyio.create_task_group() as tasks:
                rig = TeamsRig(fake, channel, ledger, clock, ctx, tasks, agent, waits)
                tasks.start_soon(channel.run)
                yield rig
                ledger.close()  # stopping is not the agents' cancelling: their questions stay pending
                tasks.cancel_scope.cancel()
        finally:
            await runner.cleanup()
            await channel.close()
            await ledger.store.close()
