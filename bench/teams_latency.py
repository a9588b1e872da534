"""Latency of a Teams click: from the `Action.Execute` invoke reaching serve's `/teams/messages` to `ask()` returning.

Run: `uv run python bench/teams_latency.py [answers]` (default 1,000). Everything is on loopback in one process: the
local Teams of the tests (tests/teams/fake_teams.py: the Entra token endpoint, the Bot Connector, the identity
provider whose key signs the activities), the bot's aiohttp server with the channel's endpoint, and an HTTP client
posting the click the way the Bot Framework does (JSON, a bearer token signed RS256). For each answer an agent asks a
question, the click arrives, and the time runs from the request entering the aiohttp handler to `ask()` returning in
the agent: it includes the token check (PyJWT, RS256), the store's activity-id check, the answer's commit, the
invoke's answer with the updated card, and the base's PUT of the outcome card to the Bot Connector, since the
answerer shows the outcome before it returns. Who clicked is looked up once and then kept (as in serve). Beside it,
in the same run and interleaved, a bare handler that checks the same token with the same keys and reads the same
body as JSON, then stops: the same interval, ending when it has the activity.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import anyio
from aiohttp import web
from latency import print_overhead

from bot.channels.base import install_channel
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from bot.teams.channel import TeamsChannel
from bot.teams.incoming import MESSAGES_PATH
from bot.teams.settings import TeamsSettings
from core import AskUserQuestionItem, AskUserQuestionRequest, Context, UserQuestionService
from tests.teams.fake_teams import ALICE, APP_ID, APP_PASSWORD, CONVERSATION, TENANT, fake_teams

QUESTION = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}
)


async def main(answers: int) -> None:
    async with fake_teams() as fake:
        directory = tempfile.TemporaryDirectory()
        settings = TeamsSettings.model_validate(
            {
                "tenant_id": TENANT,
                "openid_metadata_url": fake.identity.metadata_url,
                "token_url": fake.token_url,
                "conversations_file": str(Path(directory.name) / "conversations.json"),
                "subscriptions": [{"conversation": CONVERSATION, "service_url": fake.service_url}],
            }
        )
        channel = TeamsChannel(settings, environ={"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": APP_PASSWORD})
        ledger = Ledger(SqliteStore.open(Path(directory.name) / "bench.db"), SystemClock())
        ctx = Context()
        ctx.plugin(UserQuestionService)
        install_channel(ctx, channel, Router(["teams"], {"teams": settings.subscriptions}), ledger)
        service = ctx.user_questions
        assert service is not None

        arrived: list[float] = []
        bare_done: list[float] = []
        app = web.Application()
        channel.add_routes(app)
        ours_handler = app.router.routes()._routes[0].handler  # type: ignore[attr-defined]  # the channel's one route

        async def timed_ours(request: web.Request) -> web.StreamResponse:
            arrived.append(time.perf_counter())
            return await ours_handler(request)

        async def bare(request: web.Request) -> web.StreamResponse:
            arrived.append(time.perf_counter())
            activity = json.loads(await request.read())
            await channel.check.verify(
                request.headers.get("Authorization"), service_url=activity["serviceUrl"], channel_id="msteams"
            )
            bare_done.append(time.perf_counter())
            return web.Response(status=200)

        server = web.Application()
        server.router.add_post(MESSAGES_PATH, timed_ours)
        server.router.add_post("/bare", bare)
        runner = web.AppRunner(server, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        headers = {"Authorization": fake.identity.header(fake.service_url), "Content-Type": "application/json"}

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

                posted = len(fake.posted())
                tasks.start_soon(ask)
                await fake.wait_for("POST", posted + 1)
                await anyio.wait_all_tasks_blocked()  # the delivery is recorded and the answerer waits
                card_id = max(fake.activities, key=int)
                data = dict(fake.card(card_id)["actions"][1]["data"])
                body = json.dumps(fake.execute(card_id, ALICE, data)).encode()
                arrived.clear()
                async with http.post(MESSAGES_PATH, data=body, headers=headers) as response:
                    assert response.status == 200, await response.text()
                await answered.wait()
                sample = returned[0] - arrived[0]

                arrived.clear()
                bare_done.clear()
                async with http.post("/bare", data=body, headers=headers) as response:
                    assert response.status == 200
                if round_ >= warmup:
                    ours.append(sample)
                    baseline.append(bare_done[0] - arrived[0])

        await runner.cleanup()
        await channel.close()
        await ledger.store.close()
        directory.cleanup()
    print_overhead(answers, "bare handler (JWT check + JSON)", "click → ask() returns (handraise)", baseline, ours)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
