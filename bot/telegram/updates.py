"""How updates reach the channel: long polling (no public URL needed) or Telegram's webhook on serve's server.

The webhook is two translations and a handler, like Slack's: the secret token header is checked first (constant
time), the body is bounded and read as an `Update`; anything else is refused with 401/413/400, changing nothing.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
from aiohttp import web
from telegram import Bot, Update

from bot.channels.in_hand import InHand
from bot.telegram.transport import TelegramCallError, TelegramTransport

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1 << 20
"""An update is a few kilobytes; a megabyte is far more than Telegram sends."""
POLL_PAUSE = 5.0
"""How long polling rests after Telegram could not be reached (the transport has already retried)."""

FINISH_SECONDS = 60.0
"""How long an update begun may take to finish (recorded, then acknowledged) once serve is stopping."""

Handle = Callable[[Update], Awaitable[None]]


async def poll(transport: TelegramTransport, handle: Handle, poll_seconds: int) -> None:
    """Long-poll getUpdates for as long as the task runs, handing each update to `handle` in order.

    Asking with `offset` = the last id + 1 confirms everything before it, so Telegram drops it; an update handled
    but not yet confirmed when the program stops comes again after a restart, and `handle` recognises it. Stopping
    lets the update being handled finish (`handle` shields it) and leaves the rest of the batch unconfirmed, so
    Telegram sends them again.
    """
    await keep_trying(transport, transport.delete_webhook, "start polling")
    offset: int | None = None
    while True:
        # Stopping after an update was finished: a getUpdates sent now would go out before the cancel lands.
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            batch = await transport.updates(offset, poll_seconds)
        except TelegramCallError as failure:
            log.warning("telegram: getUpdates failed (%s); polling again in %gs", failure, POLL_PAUSE)
            await transport.sleep(POLL_PAUSE)
            continue
        for update in batch:
            await anyio.lowlevel.checkpoint_if_cancelled()  # stopping: begin no more of the batch
            offset = update.update_id + 1
            await handle(update)


async def keep_trying(transport: TelegramTransport, call: Callable[[], Awaitable[None]], what: str) -> None:
    """Make a start-up call until it works: a bad token or an outage is logged and retried, never a crash of
    `serve`, which runs the other channels too."""
    while True:
        try:
            await call()
            return
        except TelegramCallError as failure:
            log.error("telegram: cannot %s (%s); trying again in %gs", what, failure, POLL_PAUSE)
            await transport.sleep(POLL_PAUSE)


def read_update(body: bytes, bot: Bot) -> Update | None:
    """The update in a webhook body, or None when it is not one (not JSON, not an object, not an update)."""
    try:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
            return None
        return Update.de_json(data, bot)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _too_large() -> web.Response:
    return web.json_response({"ok": False, "error": "too large"}, status=413)


def webhook_handler(
    bot: Bot, secret: str, handle: Handle, handling: InHand
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler for `/telegram/webhook`."""
    expected = secret.encode()

    async def receive(request: web.Request) -> web.StreamResponse:
        given = request.headers.get(SECRET_HEADER, "").encode("utf-8", "replace")
        if not hmac.compare_digest(given, expected):
            return web.json_response({"ok": False, "error": "bad secret token"}, status=401)
        if handling.stopping:
            # Not read, not recorded: Telegram keeps it and posts it again (to the next process, after a restart).
            return web.json_response({"ok": False, "error": "stopping"}, status=503)
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _too_large()
        body = await request.content.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            return _too_large()
        update = read_update(body, bot)
        if update is None:
            return web.json_response({"ok": False, "error": "not a Telegram update"}, status=400)
        # Telegram re-sends an update until it gets a 2xx: the update is handled (recorded, acknowledged) before
        # the answer, even when serve stops meanwhile (`handle` shields it), and a re-sent one is recognised by its id.
        await handle(update)
        return web.json_response({"ok": True})

    return receive
