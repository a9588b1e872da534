"""Latency of a Slack click: from a signed block_actions request reaching the bolt app to `ask()` returning.

Run: `uv run python bench/slack_latency.py [answers]` (default 1,000). Everything is on loopback in one process: a
stand-in Slack Web API, the bot's aiohttp server with `/slack/events`, and an HTTP client posting signed clicks. For
each answer an agent asks a question, the click arrives over HTTP, and the time runs from the request entering the
aiohttp handler to `ask()` returning in the agent (which includes the base's `chat.update` of the message to the
stand-in API, since the answerer shows the outcome before it returns). Beside it, in the same run and interleaved,
a bare bolt app with the same middleware and a listener that only acks: the same interval, ending when it runs.
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import anyio
from aiohttp import web
from latency import print_overhead
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.signature import SignatureVerifier

from bot.channels.base import install_channel
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.slack.channel import SlackChannel
from bot.slack.http import events_handler
from bot.slack.settings import SlackSettings, SlackSubscription
from bot.slack.transport import make_client
from bot.store.sqlite.async_store import SqliteStore
from core import AgentRegistry, AskUserQuestionItem, AskUserQuestionRequest, Context, UserQuestionService

SECRET = "bench-signing-secret"
TOKEN = "xoxb-bench"
QUESTION = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}
)


class StandInSlack:
    """auth.test, chat.postMessage and chat.update, answered at once; each post's ts is handed to the waiter."""

    def __init__(self) -> None:
        self.ts = itertools.count(1)
        self.posted: anyio.Event = anyio.Event()
        self.last_ts = ""

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body: dict[str, Any] = await request.json() if request.content_type == "application/json" else {}
        if method == "chat.postMessage":
            self.last_ts = f"1700000000.{next(self.ts):06d}"
            self.posted.set()
            return web.json_response({"ok": True, "channel": "C0BENCH", "ts": self.last_ts})
        if method == "auth.test":
            return web.json_response({"ok": True, "user_id": "U0BOT", "bot_id": "B0BOT", "team_id": "T0"})
        return web.json_response({"ok": True, "channel": body.get("channel"), "ts": body.get("ts")})


def signed(payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body) or ""
    headers = {
        "x-slack-signature": signature,
        "x-slack-request-timestamp": stamp,
        "content-type": "application/x-www-form-urlencoded",
    }
    return body.encode(), headers


def click(action_id: str, value: str, ts: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": "U0ALICE"},
        "team": {"id": "T0"},
        "container": {"type": "message", "channel_id": "C0BENCH", "message_ts": ts},
        "trigger_id": "1.2.3",
        # Each real click has its own action_ts, which the channel records to recognise a re-delivery.
        "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "b", "action_ts": ts}],
        "state": {"values": {}},
    }


async def main(answers: int) -> None:
    stand_in = StandInSlack()
    api = web.Application()
    api.router.add_post("/api/{method}", stand_in.handle)
    api_runner = web.AppRunner(api, access_log=None)
    await api_runner.setup()
    await web.TCPSite(api_runner, "127.0.0.1", 0).start()
    api_url = f"http://127.0.0.1:{api_runner.addresses[0][1]}/api/"

    settings = SlackSettings(api_url=api_url, subscriptions=[SlackSubscription(channel="C0BENCH", thread="request")])
    client = make_client(TOKEN, api_url)
    channel = SlackChannel(settings, client=client, signing_secret=SECRET)
    directory = tempfile.TemporaryDirectory()
    ledger = Ledger(SqliteStore.open(Path(directory.name) / "bench.db"), SystemClock())
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    install_channel(ctx, channel, Router(["slack"], {"slack": settings.subscriptions}), ledger)
    service = ctx.user_questions
    assert service is not None

    bare = AsyncApp(name="bare", client=client, signing_secret=SECRET)
    bare_done: list[float] = []
    bare_ran = anyio.Event()

    async def do_nothing(ack: AsyncAck) -> None:
        await ack()
        bare_done.append(time.perf_counter())
        bare_ran.set()

    bare.action("bare")(do_nothing)

    arrived: list[float] = []
    ours_handler, bare_handler = events_handler(channel.app), events_handler(bare)

    async def timed_ours(request: web.Request) -> web.StreamResponse:
        arrived.append(time.perf_counter())
        return await ours_handler(request)

    async def timed_bare(request: web.Request) -> web.StreamResponse:
        arrived.append(time.perf_counter())
        return await bare_handler(request)

    server = web.Application()
    server.router.add_post("/slack/events", timed_ours)
    server.router.add_post("/bare/events", timed_bare)
    runner = web.AppRunner(server, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"

    ours: list[float] = []
    baseline: list[float] = []
    async with aiohttp.ClientSession(base) as http, anyio.create_task_group() as tasks:
        warmup = 50
        for round_ in range(warmup + answers):
            answered = anyio.Event()
            returned: list[float] = []

            async def ask(done: anyio.Event = answered, into: list[float] = returned) -> None:
                await service.ask(AskUserQuestionRequest(questions=[QUESTION]))
                into.append(time.perf_counter())
                done.set()

            stand_in.posted = anyio.Event()
            tasks.start_soon(ask)
            await stand_in.posted.wait()
            await anyio.wait_all_tasks_blocked()  # the delivery is recorded and the answerer waits
            arrived.clear()
            body, headers = signed(click("hr.pick.0.1", "1", stand_in.last_ts))
            async with http.post("/slack/events", data=body, headers=headers) as response:
                assert response.status == 200, await response.text()
            await answered.wait()
            sample = returned[0] - arrived[0]

            bare_ran = anyio.Event()
            bare_done.clear()
            arrived.clear()
            body, headers = signed(click("bare", "1", stand_in.last_ts))
            async with http.post("/bare/events", data=body, headers=headers) as response:
                assert response.status == 200
            await bare_ran.wait()
            if round_ >= warmup:
                ours.append(sample)
                baseline.append(bare_done[0] - arrived[0])

    await runner.cleanup()
    await api_runner.cleanup()
    await ledger.store.close()
    directory.cleanup()
    print_overhead(answers, "bare bolt listener (ack only)", "click → ask() returns (handraise)", baseline, ours)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
