"""Slack's Web API as the channel uses it: bounded retries, bounded time, and failures that name Slack's error code.

429s wait for Retry-After (`AsyncRateLimitErrorRetryHandler`); dropped or refused connections are retried with
exponential backoff. Every call is bounded as a whole (`CALL_SECONDS`), retries included, so a question is never
stuck behind a Slack outage: the caller gets a SlackCallError and decides what that means.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anyio
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.errors import HandraiseError
from bot.slack.errors import SlackErrorCode
from bot.slack.render import SlackMessage

log = logging.getLogger(__name__)

REQUEST_SECONDS = 10
"""One HTTP request to Slack."""
CALL_SECONDS = 60
"""One API call, retries and Retry-After waits included."""
HISTORY_PAGES = 5
"""How many pages of history a lookup for an unrecorded post reads, at most."""
HISTORY_PAGE_SIZE = 200
GROUP_CACHE_SECONDS = 60
"""How long a user group's member list is trusted; removing someone from the group takes effect within this."""


class SlackCallError(HandraiseError):
    """A Web API call failed: `slack_error` is Slack's error (`channel_not_found`, `not_in_channel`, …) or
    `connection_failed` / `timeout` when Slack could not be reached."""

    code = SlackErrorCode.CALL_FAILED

    def __init__(self, method: str, slack_error: str, detail: str | None = None) -> None:
        super().__init__(f"{method}: {slack_error}" + (f" ({detail})" if detail else ""))
        self.method = method
        self.slack_error = slack_error
        self.detail = detail


def make_client(
    token: str,
    api_url: str,
    *,
    timeout: float = REQUEST_SECONDS,
    rate_limit_retries: int = 5,
    connection_retries: int = 3,
    backoff: float = 0.5,
) -> AsyncWebClient:
    """An AsyncWebClient for `api_url` that honours Retry-After and retries connection errors with backoff."""
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        timeout=int(timeout) or 1,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries),
            AsyncConnectionErrorRetryHandler(
                max_retry_count=connection_retries,
                interval_calculator=BackoffRetryIntervalCalculator(backoff_factor=backoff),
            ),
        ],
    )


class SlackTransport:
    """The calls the Slack channel makes, each raising SlackCallError on failure."""

    def __init__(self, client: AsyncWebClient, *, call_seconds: float = CALL_SECONDS) -> None:
        self.client = client
        self.call_seconds = call_seconds
        self._dms: dict[str, str] = {}
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._group_reads: dict[str, anyio.Lock] = {}
        """One read of a group at a time: clicks at the same moment wait for it instead of each calling Slack."""
        self._emails: dict[str, str | None] = {}
        self._bot_id: str | None = None

    async def _call(self, method: str, call: Callable[[], Awaitable[AsyncSlackResponse]]) -> dict[str, Any]:
        try:
            with anyio.fail_after(self.call_seconds):
                response = await call()
        except SlackApiError as failure:
            data = failure.response.data
            code = data.get("error") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType]
            raise SlackCallError(method, str(code or f"http_{failure.response.status_code}")) from failure
        except TimeoutError as failure:
            raise SlackCallError(method, "timeout", f"no answer within {self.call_seconds:g}s") from failure
        except (aiohttp.ClientError, OSError) as failure:
            raise SlackCallError(method, "connection_failed", str(failure) or type(failure).__name__) from failure
        data = response.data
        return data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]

    async def open_dm(self, user: str) -> str:
        """The id of the bot's direct-message conversation with `user` (cached)."""
        if user not in self._dms:
            data = await self._call("conversations.open", lambda: self.client.conversations_open(users=user))
            channel = data.get("channel")
            if not isinstance(channel, dict) or not isinstance(channel.get("id"), str):  # pyright: ignore
                raise SlackCallError("conversations.open", "invalid_response")
            self._dms[user] = str(channel["id"])  # pyright: ignore[reportUnknownArgumentType]
        return self._dms[user]

    async def post_message(
        self,
        channel: str,
        message: SlackMessage,
        *,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Post `message` (with message `metadata`, to find it again); returns the conversation id (Slack resolves
        `#names`) and the message's ts."""
        data = await self._call(
            "chat.postMessage",
            lambda: self.client.chat_postMessage(
                channel=channel,
                text=message.text,
                blocks=message.blocks,
                thread_ts=thread_ts,
                unfurl_links=False,
                unfurl_media=False,
                metadata=metadata,
            ),
        )
        posted_channel, ts = data.get("channel"), data.get("ts")
        if not isinstance(posted_channel, str) or not isinstance(ts, str):
            raise SlackCallError("chat.postMessage", "invalid_response")
        return posted_channel, ts

    async def bot_id(self) -> str:
        """The bot id the app's own messages carry (`auth.test`, cached)."""
        if self._bot_id is None:
            data = await self._call("auth.test", lambda: self.client.auth_test())
            bot_id = data.get("bot_id")
            if not isinstance(bot_id, str) or not bot_id:
                raise SlackCallError("auth.test", "invalid_response")
            self._bot_id = bot_id
        return self._bot_id

    async def history(
        self, channel: str, *, oldest: float, thread_ts: str | None = None, pages: int = HISTORY_PAGES
    ) -> list[object]:
        """The messages in `channel` (in thread `thread_ts` when given) since `oldest`, metadata included, at most
        `pages` pages of HISTORY_PAGE_SIZE (newest first for a channel)."""
        messages: list[object] = []
        cursor: str | None = None
        for _ in range(pages):
            data = await self._history_page(channel, f"{oldest:.6f}", thread_ts, cursor)
            page = data.get("messages")
            if isinstance(page, list):
                messages.extend(page)  # pyright: ignore[reportUnknownArgumentType]
            meta = data.get("response_metadata")
            cursor = meta.get("next_cursor") if isinstance(meta, dict) else None  # pyright: ignore
            if not isinstance(cursor, str) or not cursor or not data.get("has_more", True):
                break
        return messages

    async def _history_page(
        self, channel: str, oldest: str, thread_ts: str | None, cursor: str | None
    ) -> dict[str, Any]:
        if thread_ts is None:
            return await self._call(
                "conversations.history",
                lambda: self.client.conversations_history(
                    channel=channel, oldest=oldest, include_all_metadata=True, limit=HISTORY_PAGE_SIZE, cursor=cursor
                ),
            )
        return await self._call(
            "conversations.replies",
            lambda: self.client.conversations_replies(
                channel=channel,
                ts=thread_ts,
                oldest=oldest,
                include_all_metadata=True,
                limit=HISTORY_PAGE_SIZE,
                cursor=cursor,
            ),
        )

    async def update_message(self, channel: str, ts: str, message: SlackMessage) -> None:
        await self._call(
            "chat.update",
            lambda: self.client.chat_update(channel=channel, ts=ts, text=message.text, blocks=message.blocks),
        )

    async def post_ephemeral(self, channel: str, user: str, text: str, *, thread_ts: str | None = None) -> None:
        await self._call(
            "chat.postEphemeral",
            lambda: self.client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts),
        )

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        await self._call("views.open", lambda: self.client.views_open(trigger_id=trigger_id, view=view))

    async def user_email(self, user: str) -> str | None:
        """The email address on `user`'s profile (cached), or None when Slack does not say (no users:read.email)."""
        if user not in self._emails:
            try:
                data = await self._call("users.info", lambda: self.client.users_info(user=user))
            except SlackCallError as failure:
                log.info("slack: no email address for %s (%s)", user, failure)
                return None
            profile = data.get("user", {}).get("profile", {}) if isinstance(data.get("user"), dict) else {}  # pyright: ignore
            email = profile.get("email") if isinstance(profile, dict) else None  # pyright: ignore
            self._emails[user] = email if isinstance(email, str) and "@" in email else None
        return self._emails[user]

    async def group_members(self, group: str) -> frozenset[str]:
        """The user ids in user group `group`, cached for GROUP_CACHE_SECONDS."""
        async with self._group_reads.setdefault(group, anyio.Lock()):
            return await self._group_members(group)

    async def _group_members(self, group: str) -> frozenset[str]:
        cached = self._groups.get(group)
        now = time.monotonic()
        if cached is not None and now - cached[0] < GROUP_CACHE_SECONDS:
            return cached[1]
        data = await self._call("usergroups.users.list", lambda: self.client.usergroups_users_list(usergroup=group))
        users = data.get("users")
        members = frozenset(u for u in users if isinstance(u, str)) if isinstance(users, list) else frozenset()  # pyright: ignore
        self._groups[group] = (now, members)
        return members
