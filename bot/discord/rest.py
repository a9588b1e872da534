"""A thin client for Discord's REST API: every call to `{api_url}/v10/…`, a 429 waited out (`retry_after`, else
`Retry-After`) before its one retry, and failures as `DiscordCallError` naming Discord's status, code and message,
never the token.

Why not discord.py: it keeps its base URL in a class attribute (one per process), and its plain client connects to
a hard-coded Gateway instead of the one `GET /gateway/bot` names; handraise honours the configured `api_url`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anyio

from bot.discord.errors import DiscordErrorCode
from bot.errors import HandraiseError

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

API_VERSION = 10
CALL_SECONDS = 10.0
MAX_RETRY_AFTER = 60.0
"""A 429 asking for a longer wait than this is not waited out: the call fails (the question stays deliverable)."""
USER_AGENT = "DiscordBot (handraise, 0.1)"


class DiscordCallError(HandraiseError):
    """A REST call failed: `status` (0 when Discord was not reached), Discord's JSON error `code`, and `reason`."""

    code = DiscordErrorCode.CALL_FAILED

    def __init__(self, method: str, path: str, status: int, reason: str, discord_code: int = 0) -> None:
        super().__init__(f"{method} {_route(path)}: {status or 'no answer'} {reason}")
        self.status = status
        self.discord_code = discord_code
        self.reason = reason


class DiscordRest:
    """Calls Discord's REST API as the bot. `sleep` waits out a 429 (a test records it instead)."""

    def __init__(self, api_url: str, token: str, *, sleep: Sleep = anyio.sleep) -> None:
        self.base = f"{api_url.rstrip('/')}/v{API_VERSION}"
        self._token = token
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=CALL_SECONDS)
            self._session = aiohttp.ClientSession(timeout=timeout, headers={"User-Agent": USER_AGENT})
        return self._session

    async def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, file: tuple[str, bytes] | None = None
    ) -> Any:
        """Make one call (and, after a 429, one more once Discord's wait is over); returns the JSON it answered."""
        for attempt in (1, 2):
            status, answer, headers = await self._send(method, path, body, file)
            if status == 429 and attempt == 1:
                wait = _retry_after(answer, headers)
                if wait is not None and wait <= MAX_RETRY_AFTER:
                    log.info("discord: %s %s rate limited; retrying in %.2f s", method, _route(path), wait)
                    await self._sleep(wait)
                    continue
            if status < 300:
                return answer
            message = answer.get("message") if isinstance(answer, dict) else None
            code = answer.get("code") if isinstance(answer, dict) else None
            reason = "rate_limited" if status == 429 else str(message or "no message")[:300]
            raise DiscordCallError(method, path, status, reason, code if isinstance(code, int) else 0)
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _send(
        self, method: str, path: str, body: dict[str, Any] | None, file: tuple[str, bytes] | None
    ) -> tuple[int, Any, Any]:
        headers = {"Authorization": f"Bot {self._token}"}
        data: aiohttp.FormData | None = None
        if file is not None:
            data = aiohttp.FormData()
            data.add_field("payload_json", json.dumps(body or {}), content_type="application/json")
            data.add_field("files[0]", file[1], filename=file[0], content_type="text/plain")
        try:
            async with self.session.request(
                method, self.base + path, json=body if file is None else None, data=data, headers=headers
            ) as response:
                raw = await response.read()
                answer: Any = None
                if raw and response.content_type == "application/json":
                    try:
                        answer = json.loads(raw)
                    except ValueError:
                        answer = None
                return response.status, answer, response.headers
        except (aiohttp.ClientError, TimeoutError) as failure:
            kind = "timeout" if isinstance(failure, TimeoutError) else "connection_failed"
            raise DiscordCallError(method, path, 0, kind) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _retry_after(answer: Any, headers: Any) -> float | None:
    """How long Discord asks to wait: the body's `retry_after` (seconds, fractional), else `Retry-After`."""
    value = answer.get("retry_after") if isinstance(answer, dict) else None
    if value is None and headers is not None:
        value = headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and seconds >= 0 and seconds == seconds else None


def _route(path: str) -> str:
    """The path without an interaction's token (it lets anyone answer the interaction for 15 minutes)."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] == "interactions":
        parts[3] = "…"
    return "/".join(parts)
