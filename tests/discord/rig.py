"""The Discord channel on a real seam and ledger, connected to the fake Discord's REST API and Gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from bot.discord.channel import DiscordChannel
from bot.discord.settings import DiscordSettings, DiscordSubscription
from core import (
    Agent,
)
from tests.channel_rig import ChannelRig, Waits, install_on_a_seam

from .fake_discord import CHANNEL_ID, TOKEN, FakeDiscord, fake_discord, user

ALICE = user("1300000000000000011", "Alice")
BOB = user("1300000000000000012", "Bob")
MALLORY = user("1300000000000000066", "Mallory")
REVIEWERS = "1300000000000000077"
"""A role: Bob answers as one of its members."""


@dataclass
class DiscordRig(ChannelRig):
    fake: FakeDiscord
    channel: DiscordChannel
    waits: Waits

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
    agent = Agent("dc-deploy-7", name="deploy-bot")
    ledger, clock, ctx = install_on_a_seam(channel, "discord", settings.subscriptions, tmp_path, agent)
    return DiscordRig(ledger, clock, ctx, agent, tasks, fake=fake, channel=channel, waits=waits)
