"""The webhook sender `serve` runs: claims the deliveries that are due, POSTs each signed, and records how it went.

Every replica runs one; the store's claim hands each due delivery to one of them (`bot.store.webhook_queue`). A
claim leases the delivery for longer than an attempt may take, so a sender killed mid-attempt leaves it to fall due
again by itself: after a restart, within `lease_seconds` plus a poll. Attempts run beside the polling, so a slow
receiver never delays another's deliveries.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import aiohttp
import anyio
from anyio.abc import TaskGroup

from bot.api.routes import question_json
from bot.store.errors import StoreError
from bot.store.interface import AsyncStore
from bot.store.records import QuestionRecord, utc_now
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, WebhookTarget
from bot.webhooks.signing import delivery_body, signed_headers

log = logging.getLogger(__name__)

TIMING_FOR_TESTS = "HANDRAISE_WEBHOOK_TIMING_FOR_TESTS"
"""A JSON object of `WebhookTiming` fields, read by `serve` so that process-level tests need not wait minutes."""


@dataclass(frozen=True)
class WebhookTiming:
    """How often the queue is read and how attempts are spaced. The defaults are the documented behaviour: a first
    attempt within `poll_seconds` of the event (2 s), the first retry `first_retry_seconds` after a failed attempt
    (10 s; with the poll, within 12 s), doubling up to an hour, and no new attempt once `give_up_seconds` (24 h)
    have passed since the event."""

    poll_seconds: float = 2.0
    first_retry_seconds: float = 10.0
    max_retry_seconds: float = 3600.0
    give_up_seconds: float = 24 * 3600.0
    attempt_seconds: float = 10.0
    """How long one attempt may take, connecting included."""
    lease_seconds: float = 20.0
    """How long a claimed delivery is left to its attempt before it falls due again (a sender killed mid-attempt)."""
    in_flight: int = 32

    def retry_in(self, attempt: int) -> float:
        """Seconds from failed attempt `attempt` (1, 2, …) to the next one."""
        return min(self.first_retry_seconds * 2 ** min(attempt - 1, 30), self.max_retry_seconds)

    @classmethod
    def from_environment(cls) -> WebhookTiming:
        text = os.environ.get(TIMING_FOR_TESTS)
        return replace(cls(), **{key: float(value) for key, value in json.loads(text).items()}) if text else cls()


@dataclass(frozen=True)
class Webhook:
    """A configured webhook with its secret, read from the environment at start."""

    url: str
    events: frozenset[str]
    secret: str

    @property
    def shown(self) -> str:
        """The URL's host, for logs: a URL's path or query may hold a token of the receiver's."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def _no_op(result: str) -> None:
    del result


class WebhookSender:
    """Delivers the queued webhooks of one `serve` process. `on_attempt(result)` is called after every attempt with
    "ok" (a 2xx), "retry" (failed, to be tried again) or "failed" (given up): for metrics."""

    def __init__(
        self,
        store: AsyncStore,
        webhooks: Sequence[Webhook],
        timing: WebhookTiming | None = None,
        on_attempt: Callable[[str], None] = _no_op,
    ) -> None:
        self._store = store
        self._webhooks = {hook.url: hook for hook in webhooks}
        self._urls = list(self._webhooks)
        self.timing = timing or WebhookTiming()
        self.on_attempt = on_attempt
        self._in_flight = 0
        store.subscribe_webhooks([WebhookTarget(hook.url, hook.events) for hook in webhooks])

    async def run(self) -> None:
        """Deliver until cancelled."""
        timing = self.timing
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timing.attempt_seconds))
        async with session, anyio.create_task_group() as attempts:
            while True:
                claimed = await self._claim()
                for delivery in claimed:
                    self._start(attempts, session, delivery)
                if not claimed or self._in_flight >= timing.in_flight:
                    await anyio.sleep(timing.poll_seconds)

    async def _claim(self) -> list[WebhookDelivery]:
        room = self.timing.in_flight - self._in_flight
        if room <= 0:
            return []
        try:
            return await self._store.claim_webhooks(self._urls, lease_seconds=self.timing.lease_seconds, limit=room)
        except StoreError as error:  # the store is away: its deliveries wait there until it is back
            log.warning("cannot read the webhook queue: %s", error)
            return []

    def _start(self, attempts: TaskGroup, session: aiohttp.ClientSession, delivery: WebhookDelivery) -> None:
        self._in_flight += 1

        async def attempt() -> None:
            try:
                await self._attempt(session, delivery)
            except Exception:
                # A delivery handraise cannot make (a bug of its own) must not stop serve: its lease runs out and it
                # is tried again, and the traceback says why.
                log.exception("webhook %s could not be attempted", delivery.id)
            finally:
                self._in_flight -= 1

        attempts.start_soon(attempt)

    async def _attempt(self, session: aiohttp.ClientSession, delivery: WebhookDelivery) -> None:
        hook = self._webhooks[delivery.webhook]
        record = QuestionRecord.model_validate_json(delivery.record_json)
        body = delivery_body(delivery.id, delivery.event, question_json(record))
        headers = signed_headers(hook.secret, delivery.id, int(time.time()), body)
        error = await _post(session, hook.url, body, headers)
        outcome: WebhookOutcome = "delivered"
        retry_in: float | None = None
        if error is not None:
            waited = (utc_now() - delivery.created_at).total_seconds()
            outcome = "failed" if waited >= self.timing.give_up_seconds else "retry"
            retry_in = self.timing.retry_in(delivery.attempt) if outcome == "retry" else None
            log.warning(
                "webhook %s to %s (attempt %d, %s of %s) failed: %s; %s",
                delivery.id,
                hook.shown,
                delivery.attempt,
                delivery.event,
                record.id,
                error,
                f"trying again in {retry_in:g} s" if retry_in is not None else "giving up",
            )
        try:
            await self._store.finish_webhook(delivery.id, delivery.attempt, outcome, retry_in=retry_in, error=error)
        except StoreError as failure:  # the lease runs out and the delivery is attempted again
            log.warning("cannot record webhook %s's attempt: %s", delivery.id, failure)
        self.on_attempt({"delivered": "ok", "retry": "retry", "failed": "failed"}[outcome])


async def _post(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]) -> str | None:
    """POST once; None for a 2xx, else why not (a status, a connection failure, a timeout). Redirects are not
    followed: the receiver is the URL configured, nothing it points elsewhere."""
    try:
        async with session.post(url, data=body, headers=headers, allow_redirects=False) as response:
            if 200 <= response.status < 300:
                return None
            return f"HTTP {response.status}"
    except TimeoutError:
        return "no answer in time"
    except aiohttp.ClientError as error:
        return f"cannot reach it ({type(error).__name__})"
