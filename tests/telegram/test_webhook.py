"""Webhook mode: Telegram posts updates to serve's /telegram/webhook with its secret token header; nothing else
gets in, and an update posted twice is acted on once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import anyio
import pytest
from aiohttp import web

from bot.telegram.updates import MAX_BODY, SECRET_HEADER, WEBHOOK_PATH

from .rig import ALICE, WEBHOOK_URL, TelegramRig, telegram_rig
from .test_answering import choice

pytestmark = pytest.mark.anyio

SECRET = "s3cret_token-for-tests"


@asynccontextmanager
async def served(rig: TelegramRig) -> AsyncIterator[str]:
    """Serve's aiohttp app with the channel's routes, on a free loopback port; yields the webhook's URL."""
    app = web.Application()
    rig.channel.add_routes(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}{WEBHOOK_PATH}"
    finally:
        await runner.cleanup()


async def post(url: str, body: bytes, secret: str | None = SECRET) -> int:
    headers = {"Content-Type": "application/json"} | ({SECRET_HEADER: secret} if secret is not None else {})
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as response:
        return response.status


def tap_update(rig: TelegramRig, where: tuple[int, int], data: str, update_id: int = 9001) -> bytes:
    query = {"id": "cq1", "from": ALICE, "message": rig.message(where), "chat_instance": "ci", "data": data}
    return json.dumps({"update_id": update_id, "callback_query": query}).encode()


def staging(rig: TelegramRig, where: tuple[int, int]) -> str:
    return next(data for text, data in rig.fake.buttons(*where) if text == "Staging")


async def test_run_sets_the_webhook_with_the_secret_and_only_the_updates_it_reads(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig:
        await rig.channel.run()
        (call,) = rig.fake.calls_to("setWebhook")
        assert (call["url"], call["secret_token"]) == (WEBHOOK_URL, SECRET)
        assert call["allowed_updates"] == ["message", "callback_query"]


async def test_a_tap_posted_by_telegram_answers_the_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig, served(rig) as url:
        asked = rig.ask(choice())
        where = await rig.sent()
        assert await post(url, tap_update(rig, where, staging(rig, where))) == 200
        assert (await asked.answer()).answers[0].selected == ["Staging"]


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET + "x", "ünïcödé"])
async def test_a_post_without_the_secret_token_is_refused_and_changes_nothing(
    tmp_path: Path, secret: str | None
) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig, served(rig) as url:
        asked = rig.ask(choice())
        where = await rig.sent()
        assert await post(url, tap_update(rig, where, staging(rig, where)), secret=secret) == 401
        assert rig.fake.calls_to("answerCallbackQuery") == []
        assert not asked.done.is_set()


NOT_UPDATES = [
    b"",
    b"not json",
    b"[1, 2]",
    b'{"update_id": "1"}',
    b'{"no": "id"}',
    b"\xff\xfe",
    b'{"update_id": 1, "message": 5}',
]


@pytest.mark.parametrize("body", NOT_UPDATES)
async def test_a_body_that_is_not_an_update_is_refused(tmp_path: Path, body: bytes) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig, served(rig) as url:
        assert await post(url, body) == 400


async def test_an_oversize_body_is_refused_unread(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig, served(rig) as url:
        host_port = url.split("/")[2]
        host, port = host_port.rsplit(":", 1)
        head = (
            f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: {host_port}\r\n{SECRET_HEADER}: {SECRET}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n"
        )
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(head.encode())
            await stream.send(b" " * (MAX_BODY + 1))  # the server answers by the length; it drains the rest
            assert (await stream.receive()).startswith(b"HTTP/1.1 413")
        assert rig.fake.calls_to("answerCallbackQuery") == []


async def test_an_update_posted_twice_is_acted_on_once(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_secret=SECRET) as rig, served(rig) as url:
        rig.ask(choice())
        where = await rig.sent()
        body = tap_update(rig, where, "p:0:9")  # a stale option: only a toast, so a second would show
        assert await post(url, body) == 200
        assert await post(url, body) == 200
        assert len(rig.fake.calls_to("answerCallbackQuery")) == 1


def test_webhook_mode_needs_a_url_and_a_secret() -> None:
    from bot.telegram.settings import TelegramSettings

    with pytest.raises(ValueError, match="public https URL"):
        TelegramSettings(mode="webhook", webhook_secret_env="S")
    with pytest.raises(ValueError, match="so that only Telegram can post answers"):
        TelegramSettings(mode="webhook", webhook_url=WEBHOOK_URL)
