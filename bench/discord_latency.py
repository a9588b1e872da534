"""Latency of a Discord click: from the fake Discord sending INTERACTION_CREATE on the Gateway to `ask()` returning.

Run: `uv run python bench/discord_latency.py [answers]` (default 1,000). Everything is on loopback in one process:
the fake Discord of the tests (tests/discord/fake_discord.py: REST API and Gateway), the channel connected to it with
its own client, and an agent asking through the real seam and the SQLite store. For each answer the agent asks, a
responder presses a button, and the time runs from the fake writing the event to the websocket to `ask()` returning:
it includes reading the frame, the interaction-id check in the store, the answer's commit, the interaction callback
(type 6) and the PATCH that edits the message to its outcome (the base shows the outcome before `ask()` returns).
Beside it, in the same run and interleaved, a bare Gateway client on a session of its own: the same event from the
same fake, the time ending when it has the frame parsed as JSON.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.lowlevel
from latency import print_overhead

from bot.channels.base import install_channel
from bot.discord.channel import DiscordChannel
from bot.discord.settings import DiscordSettings, DiscordSubscription
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from core import Agent, AgentRegistry, AskUserQuestionItem, AskUserQuestionRequest, Context, UserQuestionService
from tests.discord.fake_discord import CHANNEL_ID, TOKEN, FakeDiscord, fake_discord, user

ALICE = user("1300000000000000011", "Alice")
QUESTION = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}
)


async def bare_client(fake: FakeDiscord, received: list[float], ready: anyio.Event) -> None:
    """A Gateway client that only identifies, answers heartbeats and notes when each DISPATCH is parsed."""
    async with aiohttp.ClientSession() as http, http.ws_connect(fake.gateway_url + "/?v=10&encoding=json") as ws:
        async for frame in ws:
            if frame.type != aiohttp.WSMsgType.TEXT:
                return
            payload: Any = json.loads(frame.data)
            if payload["op"] == 10:
                await ws.send_str(json.dumps({"op": 2, "d": {"token": TOKEN, "intents": 33281, "properties": {}}}))
            elif payload["op"] == 0 and payload["t"] == "READY":
                ready.set()
            elif payload["op"] == 0:
                received.append(time.perf_counter())


def posted(fake: FakeDiscord) -> int:
    return sum(1 for call in fake.calls_to("POST /channels/") if call.path.endswith("/messages"))


async def main(answers: int) -> None:
    async with fake_discord() as fake:
        settings = DiscordSettings(
            api_url=fake.url + "/api", subscriptions=[DiscordSubscription(channel=CHANNEL_ID, responders=[ALICE["id"]])]
        )
        channel = DiscordChannel(settings, token=TOKEN)
        directory = tempfile.TemporaryDirectory()
        ledger = Ledger(SqliteStore.open(Path(directory.name) / "bench.db"), SystemClock())
        ctx = Context()
        ctx.plugin(AgentRegistry)
        ctx.plugin(UserQuestionService)
        install_channel(ctx, channel, Router(["discord"], {"discord": settings.subscriptions}), ledger)
        service = ctx.user_questions
        assert service is not None and ctx.agents is not None
        agent = Agent("dc-bench", name="bench")
        ctx.agents.enter(agent)

        ours: list[float] = []
        baseline: list[float] = []
        received: list[float] = []
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(channel.run)
            await channel.gateway.ready.wait()
            fake.pinned = fake.session  # people's clicks go to the channel's session, not the bare client's
            bare_ready = anyio.Event()
            tasks.start_soon(bare_client, fake, received, bare_ready)
            await bare_ready.wait()
            bare_session = list(fake.sessions.values())[-1]
            warmup = 50
            for round_ in range(warmup + answers):
                answered = anyio.Event()
                returned: list[float] = []

                async def ask(done: anyio.Event = answered, into: list[float] = returned) -> None:
                    await service.ask(AskUserQuestionRequest(questions=[QUESTION], agent=agent))
                    into.append(time.perf_counter())
                    done.set()

                sent = posted(fake)
                tasks.start_soon(ask)
                await fake.until(lambda before=sent: posted(fake) > before)
                await anyio.wait_all_tasks_blocked()  # the delivery is recorded and the answerer waits
                message = max(fake.messages, key=int)
                custom_id = fake.buttons(message)[1]["custom_id"]
                started = time.perf_counter()
                await fake.click(message, custom_id, ALICE)
                await answered.wait()
                sample = returned[0] - started

                received.clear()
                started = time.perf_counter()
                await fake.dispatch("INTERACTION_CREATE", {"id": str(round_), "type": 3}, bare_session)
                with anyio.fail_after(5):
                    while not received:
                        await anyio.lowlevel.checkpoint()
                if round_ >= warmup:
                    ours.append(sample)
                    baseline.append(received[0] - started)
            tasks.cancel_scope.cancel()
        await channel.close()
        await ledger.store.close()
        directory.cleanup()
    print_overhead(answers, "bare Gateway client (frame → JSON)", "click → ask() returns (handraise)", baseline, ours)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
