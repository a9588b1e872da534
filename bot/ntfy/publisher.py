"""Publishing to an ntfy server: one JSON POST to its root URL with `Authorization: Bearer <token>`. Failures are
`PublishError`s naming the status and ntfy's own message, never the token."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from bot.errors import HandraiseError
from bot.ntfy.errors import NtfyErrorCode

PUBLISH_SECONDS = 10.0

ADVICE = {
    401: "check the access token in {token_env}",
    403: "give the token's user write access to the topic (ntfy access control)",
    413: "the message is too large for this server",
    429: "the server is rate-limiting handraise; raise its limits or use your own server",
    0: "cannot reach the ntfy server at {server}",
}


class PublishError(HandraiseError):
    """A publish failed: `status` is 0 when the server was not reached."""

    code = NtfyErrorCode.PUBLISH_FAILED

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status or 'no answer'} {reason}")
        self.status = status


class Publisher:
    """Publishes messages to one ntfy server as the token's user."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server.rstrip("/")
        self._token = token
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PUBLISH_SECONDS))
        return self._session

    async def publish(self, message: dict[str, Any]) -> str:
        """Publish `message` (ntfy's JSON format); returns the id ntfy gave it."""
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            async with self.session.post(self.server + "/", data=body, headers=headers) as response:
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as failure:
            raise PublishError(0, "timeout" if isinstance(failure, TimeoutError) else "connection failed") from None
        try:
            answer: Any = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        if status >= 300:
            said = answer.get("error") if isinstance(answer, dict) else None
            raise PublishError(status, str(said or "no message")[:300])
        message_id = answer.get("id") if isinstance(answer, dict) else None
        return str(message_id) if message_id else ""

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
