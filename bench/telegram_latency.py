"""Latency of a Telegram tap: from the update reaching serve's `/telegram/webhook` to `ask()` returning.

Run: `uv run python bench/telegram_latency.py [answers]` (default 1,000). Everything is on loopback in one process:
the fake Bot API of the tests (tests/telegram/fake_telegram.py) behind the real python-telegram-bot `Bot`, the bot's
aiohttp server with the channel's webhook, and an HTTP client posting the tap the way Telegram does (JSON, secret
token header). For each answer an agent asks a question, the tap arrives, and the time runs from the request
entering the aiohttp handler to `ask()` returning in the agent: it includes the store's update-id check, the
answer's commit, answerCallbackQuery, and the base's editMessageText of the outcome, since the answerer shows the
outcome before it returns. Beside it, in the same run and interleaved, a bare webhook handler that checks the same
header and reads the same body as an `Update`, then stops: the same interval, ending when it has the update.
"""

from __future__ import annotations

import hmac
import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import anyio
from aiohttp import web
from latency import print_overhead
from telegram import Update

from bot.channels.base import install_channel
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from bot.telegram.channel import TelegramChannel
from bot.telegram.settings import TelegramSettings, TelegramSubscription
from bot.telegram.transport import make_bot
from bot.telegram.updates import SECRET_HEADER, WEBHOOK_PATH
from core import AskUserQuestionItem, AskUserQuestionRequest, Context, UserQuestionService
from tests.telegram.fake_telegram import TOKEN, fake_telegram, user

SECRET = "bench-webhook-secret"
CHAT = -100777
ALICE = user(111, "Alice")
QUESTION = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}
)


async def main(answers: int) -> None:
    async with fake_telegram() as fake:
        settings = TelegramSettings(
            api_url=fake.url,
            mode="webhook",
            webhook_url="https://bench.example.org/telegram/webhook",
            webhook_secret_env="UNUSED",
            subscriptions=[TelegramSubscription(chat=CHAT)],
        )
        bot = make_bot(TOKEN, fake.url)
        channel = TelegramChannel(settings, bot=bot, webhook_secret=SECRET)
        directory = tempfile.TemporaryDirectory()
        ledger = Ledger(SqliteStore.open(Path(directory.name) / "bench.db"), SystemClock())
        ctx = Context()
        ctx.plugin(UserQuestionService)
        install_channel(ctx, channel, Router(["telegram"], {"telegram": settings.subscriptions}), ledger)
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
            given = request.headers.get(SECRET_HEADER, "").encode()
            if not hmac.compare_digest(given, SECRET.encode()):
                return web.Response(status=401)
            update = Update.de_json(json.loads(await request.read()), bot)
            assert update is not None
            bare_done.append(time.perf_counter())
            return web.json_response({"ok": True})

        server = web.Application()
        server.router.add_post(WEBHOOK_PATH, timed_ours)
        server.router.add_post("/bare", bare)
        runner = web.AppRunner(server, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        headers = {SECRET_HEADER: SECRET, "Content-Type": "application/json"}

        ours: list[float] = []
        baseline: list[float] = []
        update_id = 1
        async with aiohttp.ClientSession(base) as http, anyio.create_task_group() as tasks:
            warmup = 50
            for round_ in range(warmup + answers):
                answered = anyio.Event()
                returned: list[float] = []

                async def ask(done: anyio.Event = answered, into: list[float] = returned) -> None:
                    await service.ask(AskUserQuestionRequest(questions=[QUESTION]))
                    into.append(time.perf_counter())
                    done.set()

                sent = len(fake.calls_to("sendMessage"))
                tasks.start_soon(ask)
                await fake.wait_for("sendMessage", sent + 1)
                await anyio.wait_all_tasks_blocked()  # the delivery is recorded and the answerer waits
                message = fake.messages[max(fake.messages)]
                query = {"id": f"cq{round_}", "from": ALICE, "message": message, "chat_instance": "c", "data": "p:0:1"}
                body = json.dumps({"update_id": update_id, "callback_query": query}).encode()
                update_id += 1
                arrived.clear()
                async with http.post(WEBHOOK_PATH, data=body, headers=headers) as response:
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
    print_overhead(answers, "bare webhook handler (secret + Update)", "tap → ask() returns (handraise)", baseline, ours)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
