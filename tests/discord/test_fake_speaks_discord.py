"""The fake Discord checked against discord.py, the platform's best-known client: discord.py logs in, finds the
Gateway with `GET /gateway/bot`, identifies (over zlib-stream, as it asks), heartbeats, receives a click and a
message, answers the click with an ephemeral callback, sends and threads, and resumes after op 7 with the events it
missed. If the fake spoke anything but Discord's wire format, discord.py would not get through this."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import discord
import pytest
from discord.http import Route

from .fake_discord import APP_ID, CHANNEL_ID, TOKEN, FakeDiscord, fake_discord, user

pytestmark = pytest.mark.anyio

ALICE = user("1300000000000000011", "Alice")
NO_PINGS = discord.AllowedMentions.none()


class Recorder(discord.AutoShardedClient):
    """discord.py's own client, noting what reached it and answering every button press privately."""

    def __init__(self) -> None:
        intents = discord.Intents.none()
        intents.guilds = intents.guild_messages = intents.message_content = True
        super().__init__(intents=intents, shard_count=None, guild_ready_timeout=0.05)
        self.ready = asyncio.Event()
        self.seen: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    async def on_ready(self) -> None:
        self.ready.set()

    async def on_message(self, message: discord.Message) -> None:
        self.seen.append(("message", (message.content, message.author.id, message.channel.id)))
        self.changed.set()

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        data: Any = interaction.data or {}
        self.seen.append(("interaction", (data.get("custom_id"), interaction.user.id, interaction.message)))
        refusal = "Only the responders may answer."
        await interaction.response.send_message(refusal, ephemeral=True, allowed_mentions=NO_PINGS)
        self.changed.set()

    async def until(self, count: int) -> None:
        with anyio.fail_after(5):
            while len(self.seen) < count:
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def running(fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Recorder]:
    # discord.py keeps its REST base in a class attribute: the only way to point it elsewhere is to patch it.
    monkeypatch.setattr(Route, "BASE", fake.url + "/api/v10")
    client = Recorder()
    task = asyncio.ensure_future(client.start(TOKEN))
    try:
        with anyio.fail_after(10):
            await client.ready.wait()
        yield client
    finally:
        await client.close()
        await asyncio.gather(task, return_exceptions=True)


async def test_discordpy_logs_in_identifies_and_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_discord(heartbeat_ms=50) as fake, running(fake, monkeypatch) as client:
        assert client.user is not None and str(client.user.id) == APP_ID
        assert fake.calls_to("GET /gateway/bot")
        assert "compress=zlib-stream" in fake.gateway_urls[0] and "v=10" in fake.gateway_urls[0]
        assert fake.identified[0]["token"] == TOKEN
        assert fake.identified[0]["intents"] == (1 << 0) | (1 << 9) | (1 << 15)
        await fake.until(lambda: len(fake.connections[0].heartbeats) >= 3)
        assert fake.connections[0].heartbeats[-1] == 1  # the sequence of the last event, READY


async def test_discordpy_sends_threads_and_answers_a_click_privately(monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_discord() as fake, running(fake, monkeypatch) as client:
        channel = await client.fetch_channel(int(CHANNEL_ID))
        assert isinstance(channel, discord.TextChannel)
        thread = await channel.create_thread(name="deploy-bot", type=discord.ChannelType.public_thread)
        assert fake.threads()[0]["name"] == "deploy-bot" and fake.threads()[0]["type"] == 11
        sent = await thread.send("Deploy where? <@1>", allowed_mentions=NO_PINGS)
        assert fake.messages[str(sent.id)]["content"] == "Deploy where? <@1>"
        interaction = await fake.click(str(sent.id), "hr:pick:0:1", ALICE)
        await client.until(1)
        kind, (custom_id, who, message) = client.seen[0]
        assert (kind, custom_id, who, message.id) == ("interaction", "hr:pick:0:1", int(ALICE["id"]), sent.id)
        await fake.until(lambda: fake.callbacks(interaction))
        callback = fake.callbacks(interaction)[0]
        assert callback["type"] == 4 and callback["data"]["flags"] == 64


async def test_discordpy_refused_when_it_breaks_discords_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_discord() as fake, running(fake, monkeypatch) as client:
        channel = await client.fetch_channel(int(CHANNEL_ID))
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.HTTPException) as refused:
            await channel.send("x" * 2001, allowed_mentions=NO_PINGS)
        assert refused.value.status == 400 and refused.value.code == 50035
        fake.rate_limit("POST /channels", retry_after=0.05)
        await channel.send("after a 429", allowed_mentions=NO_PINGS)  # discord.py waits and retries, as it should
        assert [call.status for call in fake.calls if call.path.endswith("/messages")][-2:] == [429, 200]


async def test_discordpy_resumes_after_op_7_and_gets_what_it_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_discord() as fake, running(fake, monkeypatch) as client:
        session = fake.session
        await fake.reconnect()
        await fake.post(CHANNEL_ID, ALICE, "sent while it was away")
        await client.until(1)
        assert client.seen[0] == ("message", ("sent while it was away", int(ALICE["id"]), int(CHANNEL_ID)))
        assert fake.resumed[0]["session_id"] == session.id and fake.resumed[0]["seq"] == 1
        assert fake.gateway_urls[-1].startswith("/resume-gateway?")
        assert len(fake.identified) == 1  # resumed, not identified afresh
        await fake.until(lambda: session.events[-1]["t"] == "RESUMED")
