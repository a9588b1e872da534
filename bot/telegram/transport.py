"""Telegram's Bot API as the channel uses it (python-telegram-bot's `Bot`): 429s wait for `retry_after`, dropped
connections are retried with backoff, every call is bounded as a whole, and failures name Telegram's description.

`api_url` points the bot at another Bot API server: a local Bot API server, or the test double.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TypeVar

import anyio
from telegram import (
    Bot,
    ForceReply,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    ReplyParameters,
    Update,
)
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter, TelegramError, TimedOut

from bot.errors import HandraiseError
from bot.telegram.errors import TelegramErrorCode
from bot.telegram.http import AiohttpRequest
from bot.telegram.render import Button

# python-telegram-bot 22 warns on every read of a time period unless told to hand out timedeltas, which is what its
# next major version does anyway; without it RetryAfter itself warns (and a warning is an error in our tests).
os.environ.setdefault("PTB_TIMEDELTA", "true")

log = logging.getLogger(__name__)

T = TypeVar("T")

REQUEST_SECONDS = 10.0
"""One HTTP request to Telegram (a long poll adds its own timeout to this)."""
CALL_SECONDS = 60.0
"""One API call, retries and retry_after waits included."""
RETRIES = 4
"""Connection failures retried per call (429s are retried while the call's time lasts)."""
BACKOFF = 0.5
ALLOWED_UPDATES = ("message", "callback_query")
"""The only updates the channel reads; Telegram sends no others, so nobody can feed it anything else."""

Sleep = Callable[[float], Awaitable[None]]


class TelegramCallError(HandraiseError):
    """A Bot API call failed: `reason` is Telegram's description ("Bad Request: chat not found"), or `timeout`,
    `rate_limited`, `connection_failed` when Telegram could not be reached in time."""

    code = TelegramErrorCode.CALL_FAILED

    def __init__(self, method: str, reason: str) -> None:
        super().__init__(f"{method}: {reason}")
        self.method = method
        self.reason = reason


def make_bot(token: str, api_url: str, *, request_seconds: float = REQUEST_SECONDS, poll_seconds: int = 50) -> Bot:
    """A Bot on `api_url` (`https://api.telegram.org` or a double) that sends with aiohttp (`bot.telegram.http`)."""
    request = AiohttpRequest(pool_size=16, read_timeout=request_seconds, connect_timeout=request_seconds)
    polling = AiohttpRequest(pool_size=1, read_timeout=poll_seconds + request_seconds, connect_timeout=request_seconds)
    return Bot(
        token,
        base_url=f"{api_url}/bot",
        base_file_url=f"{api_url}/file/bot",
        request=request,
        get_updates_request=polling,
    )


def keyboard(rows: Sequence[Sequence[Button]]) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(text, callback_data=data) for text, data in row] for row in rows]
    )


class TelegramTransport:
    """The calls the Telegram channel makes, each raising TelegramCallError on failure. `sleep` waits out a
    retry_after or a backoff (tests pass one that records the wait instead of waiting)."""

    def __init__(
        self,
        bot: Bot,
        *,
        call_seconds: float = CALL_SECONDS,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.bot = bot
        self.call_seconds = call_seconds
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self._ready = anyio.Lock()
        self._started = False

    async def _call(self, method: str, call: Callable[[], Awaitable[T]], *, seconds: float | None = None) -> T:
        if not self._started:
            await self.start()
        return await self._attempt(method, call, seconds)

    async def start(self) -> None:
        """Open the connection pools and learn who the bot is (getMe), once; raises TelegramCallError."""
        async with self._ready:
            if not self._started:
                await self._attempt("getMe", self.bot.initialize, None)
                self._started = True

    async def _attempt(self, method: str, call: Callable[[], Awaitable[T]], seconds: float | None) -> T:
        budget = seconds if seconds is not None else self.call_seconds
        failures = 0
        try:
            with anyio.fail_after(budget) as scope:
                while True:
                    try:
                        return await call()
                    except RetryAfter as limited:
                        wait = _seconds(limited.retry_after)
                        if anyio.current_time() + wait >= scope.deadline:
                            raise TelegramCallError(method, f"rate_limited (retry after {wait:g}s)") from limited
                        log.info("telegram: %s rate-limited; retrying after %gs", method, wait)
                        await self.sleep(wait)
                    except (InvalidToken, Forbidden, BadRequest) as refused:
                        raise TelegramCallError(method, refused.message) from refused
                    except (TimedOut, NetworkError) as failure:
                        failures += 1
                        if failures > self.retries:
                            raise TelegramCallError(method, f"connection_failed ({failure.message})") from failure
                        await self.sleep(self.backoff * 2 ** (failures - 1))
                    except TelegramError as failure:
                        raise TelegramCallError(method, failure.message) from failure
        except TimeoutError as failure:
            raise TelegramCallError(method, f"timeout (no answer within {budget:g}s)") from failure

    async def bot_id(self) -> int:
        """The bot's own user id: replies count only when they answer the bot's own messages."""
        await self.start()
        return self.bot.id

    async def send(
        self,
        chat: int | str,
        text: str,
        rows: Sequence[Sequence[Button]] = (),
        *,
        topic: int | None = None,
        reply_to: int | None = None,
        force_reply: str | None = None,
    ) -> tuple[int, int]:
        """Send an HTML message; returns its (chat id, message id). `force_reply` opens the reply field with that
        placeholder for the people mentioned or replied to (selective)."""
        markup: InlineKeyboardMarkup | ForceReply | None = keyboard(rows) if rows else None
        if force_reply is not None:
            markup = ForceReply(selective=True, input_field_placeholder=force_reply[:64])
        reply = ReplyParameters(reply_to, allow_sending_without_reply=True) if reply_to is not None else None
        sent: Message = await self._call(
            "sendMessage",
            lambda: self.bot.send_message(
                chat,
                text,
                parse_mode=ParseMode.HTML,
                reply_markup=markup,
                message_thread_id=topic,
                reply_parameters=reply,
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            ),
        )
        return sent.chat.id, sent.message_id

    async def edit(self, chat: int, message: int, text: str, rows: Sequence[Sequence[Button]] = ()) -> None:
        """Replace a message's text and keyboard (no rows: no buttons). An edit that changes nothing is no failure."""
        try:
            await self._call(
                "editMessageText",
                lambda: self.bot.edit_message_text(
                    text,
                    chat_id=chat,
                    message_id=message,
                    parse_mode=ParseMode.HTML,
                    reply_markup=keyboard(rows) if rows else None,
                    link_preview_options=LinkPreviewOptions(is_disabled=True),
                ),
            )
        except TelegramCallError as failure:
            if "message is not modified" not in failure.reason:
                raise

    async def edit_keyboard(self, chat: int, message: int, rows: Sequence[Sequence[Button]]) -> None:
        """Replace only a message's keyboard (a ticked option)."""
        try:
            await self._call(
                "editMessageReplyMarkup",
                lambda: self.bot.edit_message_reply_markup(
                    chat_id=chat, message_id=message, reply_markup=keyboard(rows)
                ),
            )
        except TelegramCallError as failure:
            if "message is not modified" not in failure.reason:
                raise

    async def answer_tap(self, tap_id: str, text: str | None = None, *, alert: bool = False) -> None:
        """Stop the button's spinner, with a toast (or an alert the person must dismiss)."""
        await self._call(
            "answerCallbackQuery",
            lambda: self.bot.answer_callback_query(tap_id, text=text, show_alert=alert),
            seconds=10,
        )

    async def create_topic(self, chat: int | str, name: str) -> int:
        """Open a forum topic in `chat`; returns its message_thread_id."""
        topic = await self._call("createForumTopic", lambda: self.bot.create_forum_topic(chat, name[:128]))
        return topic.message_thread_id

    async def updates(self, offset: int | None, poll_seconds: int) -> tuple[Update, ...]:
        """One long poll: the updates after `offset` (waiting up to `poll_seconds` for one). Confirming an offset
        tells Telegram to forget everything before it."""
        return await self._call(
            "getUpdates",
            lambda: self.bot.get_updates(
                offset=offset, timeout=timedelta(seconds=poll_seconds), allowed_updates=list(ALLOWED_UPDATES)
            ),
            seconds=poll_seconds + self.call_seconds,
        )

    async def set_webhook(self, url: str, secret: str) -> None:
        await self._call(
            "setWebhook",
            lambda: self.bot.set_webhook(url, secret_token=secret, allowed_updates=list(ALLOWED_UPDATES)),
        )

    async def delete_webhook(self) -> None:
        """Long polling only works with no webhook set (Telegram answers getUpdates with a conflict otherwise)."""
        await self._call("deleteWebhook", self.bot.delete_webhook)

    async def close(self) -> None:
        if self._started:
            await self.bot.shutdown()
            self._started = False
        else:
            await self.bot.request.shutdown()  # getMe failed: the bot never started, but its pool may be open


def _seconds(value: int | float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)
