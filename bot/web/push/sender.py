"""One push to one device (RFC 8030 section 5), with its retries: the encrypted payload POSTed to the device's
endpoint with `Authorization: vapid …`, `TTL` and `Urgency: high`.

What the push service says decides what follows: 201 (or any 2xx) is done; 404 and 410 mean the subscription is
gone (the caller removes it); 429 is retried after its `Retry-After` (capped), 5xx and no answer at all after a
backoff of a few seconds, all within `DEADLINE_SECONDS`; anything else is a refusal, logged and not retried.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Literal
from urllib.parse import urlsplit

import aiohttp
import anyio

from bot.web.push.keys import VapidKeys

log = logging.getLogger("handraise.web.push")

TTL_SECONDS = 12 * 3600
"""How long a push service keeps a push for a device that is offline: a question older than that is in the inbox."""
DEADLINE_SECONDS = 25.0
"""A push and all its retries are over within this."""
ATTEMPT_SECONDS = 10.0
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 8.0
MAX_RETRY_AFTER_SECONDS = 10.0
"""A `Retry-After` longer than this is waited only this long (the deadline still ends it)."""

Ending = Literal["delivered", "gone", "refused", "gave up"]


@dataclass(frozen=True)
class PushOutcome:
    ending: Ending
    status: int
    """The push service's last status (0 when it never answered)."""
    attempts: int


class PushSender:
    """Sends pushes signed with `keys`; one HTTP client for all of them."""

    def __init__(self, keys: VapidKeys) -> None:
        self.keys = keys
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def send(self, endpoint: str, body: bytes) -> PushOutcome:
        """Push `body` (already encrypted for the device) to `endpoint`, retrying as the module docstring says."""
        audience = origin_of(endpoint)
        attempts, status, delay = 0, 0, FIRST_BACKOFF_SECONDS
        with anyio.move_on_after(DEADLINE_SECONDS) as deadline:
            while True:
                attempts += 1
                status, retry_after = await self._attempt(endpoint, audience, body)
                if 200 <= status < 300:
                    return PushOutcome("delivered", status, attempts)
                if status in (404, 410):
                    return PushOutcome("gone", status, attempts)
                if status == 429:
                    wait = min(retry_after if retry_after is not None else delay, MAX_RETRY_AFTER_SECONDS)
                elif status == 0 or status >= 500:
                    wait = delay * (0.75 + random.random() / 2)  # jittered: many devices of one service retry apart
                else:
                    log.warning("push to %s refused with %s; not retried", audience, status)
                    return PushOutcome("refused", status, attempts)
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
                if anyio.current_time() + wait >= deadline.deadline:
                    break
                await anyio.sleep(wait)
        log.warning("push to %s given up after %d attempts (last answer %s)", audience, attempts, status or "none")
        return PushOutcome("gave up", status, attempts)

    async def _attempt(self, endpoint: str, audience: str, body: bytes) -> tuple[int, float | None]:
        headers = {
            "Authorization": self.keys.authorization(audience),
            "Content-Encoding": "aes128gcm",
            "Content-Type": "application/octet-stream",
            "TTL": str(TTL_SECONDS),
            "Urgency": "high",
        }
        try:
            timeout = aiohttp.ClientTimeout(total=ATTEMPT_SECONDS)
            async with self.session.post(endpoint, data=body, headers=headers, timeout=timeout) as response:
                await response.read()
                return response.status, retry_after_seconds(response.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError) as failure:
            log.info("push to %s: no answer (%s)", audience, type(failure).__name__)
            return 0, None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def origin_of(endpoint: str) -> str:
    """The push service's origin, the JWT's `aud`: scheme, host and a port only when it is not the default."""
    parts = urlsplit(endpoint)
    host = (parts.hostname or "").lower()
    default = {"https": 443, "http": 80}.get(parts.scheme)
    port = f":{parts.port}" if parts.port is not None and parts.port != default else ""
    return f"{parts.scheme}://{host}{port}"


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds: a number of seconds, or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(min(int(value[:8]), 10**6))
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, (moment - datetime.now(moment.tzinfo)).total_seconds())
