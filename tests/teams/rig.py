"""The Teams channel on a real seam and ledger, its `/teams/messages` served on a free loopback port, posting to
the local Teams (whose people post back to it with tokens from the local identity provider)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from aiohttp import web

from bot.teams.channel import TeamsChannel
from bot.teams.incoming import MESSAGES_PATH
from bot.teams.settings import TeamsSettings, TeamsSubscription
from core import (
    Agent,
)
from tests.channel_rig import ChannelRig, Waits, install_on_a_seam

from .fake_teams import APP_ID, APP_PASSWORD, CONVERSATION, TENANT, FakeTeams, fake_teams

ENVIRON = {"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": APP_PASSWORD}


@dataclass
class TeamsRig(ChannelRig):
    fake: FakeTeams
    channel: TeamsChannel
    waits: Waits

    async def posted(self, count: int = 1) -> str:
        """The activity id of the `count`-th card posted, once it has been."""
        await self.fake.wait_for("POST", count)
        ids = [activity_id for activity_id, activity in self.fake.activities.items() if activity.get("attachments")]
        return ids[count - 1]


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
        agent = Agent("deploy-7", name="deploy-bot")
        ledger, clock, ctx = install_on_a_seam(channel, "teams", model.subscriptions, tmp_path, agent)
        app = web.Application()
        channel.add_routes(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        fake.bot_url = f"http://{host}:{port}{MESSAGES_PATH}"
        try:
            async with anyio.create_task_group() as tasks:
                rig = TeamsRig(ledger, clock, ctx, agent, tasks, fake=fake, channel=channel, waits=waits)
                tasks.start_soon(channel.run)
                yield rig
                ledger.close()  # stopping is not the agents' cancelling: their questions stay pending
                tasks.cancel_scope.cancel()
        finally:
            await runner.cleanup()
            await channel.close()
            await ledger.store.close()
