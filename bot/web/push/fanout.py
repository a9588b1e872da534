"""Who gets a question, and pushing it to them in the background: each new question the inbox shows goes to the
devices of the signed-in people who may answer it (its responders, as the inbox reads them; everyone allowed to
sign in when it has none), and never to anyone else.

The ask path only drops the question in a queue (`announce`): the pushes run in the channel's own task group,
cancelled when the program stops, each bounded by the sender's deadline. A device the push service says is gone
(404, 410) is removed at once, before the next question is pushed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from bot.channels.base import Channel
from bot.store.errors import StoreUnavailable
from bot.store.interface import AsyncStore
from bot.store.records import PushSubscription, QuestionRecord
from bot.web.push.answer_tokens import AnswerTokens
from bot.web.push.encryption import encrypt, unb64
from bot.web.push.notification import render_notification
from bot.web.push.sender import PushSender

log = logging.getLogger("handraise.web.push")

QUEUED = 10_000
"""Questions waiting to be pushed; a burst beyond it is not pushed (the inbox still lists every one)."""
AT_ONCE = 64
"""Pushes in flight at once, across questions."""


class Fanout:
    """Pushes each announced question to the devices of the people who may answer it."""

    def __init__(
        self,
        channel: Channel,
        store: AsyncStore,
        sender: PushSender,
        tokens: AnswerTokens,
        signed_in_allowed: Callable[[str], bool],
        base_url: str = "",
    ) -> None:
        self.channel = channel
        self.store = store
        self.sender = sender
        self.tokens = tokens
        self.signed_in_allowed = signed_in_allowed
        self.base_url = base_url.rstrip("/")
        send, receive = anyio.create_memory_object_stream[QuestionRecord](QUEUED)
        self._send: MemoryObjectSendStream[QuestionRecord] = send
        self._receive: MemoryObjectReceiveStream[QuestionRecord] = receive
        self._at_once = anyio.Semaphore(AT_ONCE)
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()

    def announce(self, record: QuestionRecord) -> None:
        """Queue `record` to be pushed; never waits."""
        try:
            self._send.send_nowait(record)
            self._busy += 1
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
        except anyio.WouldBlock:
            log.warning("question %s not pushed: %d questions already wait to be pushed", record.id, QUEUED)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # stopping

    async def run(self) -> None:
        """Push the announced questions until cancelled."""
        async with self._send, self._receive, anyio.create_task_group() as group:
            async for record in self._receive:
                group.start_soon(self._push_question, record)

    async def settled(self) -> None:
        """Wait until every question announced so far has been pushed (or given up), retries included."""
        await self._idle.wait()

    async def recipients(self, record: QuestionRecord) -> list[PushSubscription]:
        """The devices `record` is pushed to: their owners may sign in and may answer it."""
        replies = self.channel.replies
        responders = await replies.responders(record)
        known: dict[str, frozenset[str] | None] = {}
        chosen: list[PushSubscription] = []
        for device in await self.store.list_push_subscriptions():
            if self.signed_in_allowed(device.person) and await replies.may_answer(device.person, responders, known):
                chosen.append(device)
        return chosen

    async def _push_question(self, record: QuestionRecord) -> None:
        try:
            devices = await self.recipients(record)
            async with anyio.create_task_group() as group:
                for device in devices:
                    group.start_soon(self._push_device, record, device)
        except StoreUnavailable as down:
            log.warning("question %s not pushed: %s", record.id, down.message)
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._idle.set()

    async def _push_device(self, record: QuestionRecord, device: PushSubscription) -> None:
        async with self._at_once:
            try:
                payload = render_notification(
                    record, self.tokens.issue(record.id, device.person, device.endpoint), self.base_url
                )
                body = encrypt(payload, unb64(device.p256dh), unb64(device.auth))
                outcome = await self.sender.send(device.endpoint, body)
                if outcome.ending in ("refused", "gave up"):
                    self.channel.ledger.observer.send_failed(self.channel.name)
                if outcome.ending == "gone":
                    await self.store.delete_push_subscription(device.endpoint, person=device.person)
                    log.info("a device of %s unsubscribed (the push service said %s)", device.person, outcome.status)
            except Exception:
                # One device's failure (a key the browser mangled, a store hiccup) never stops the others.
                log.exception("question %s: the push to a device of %s failed", record.id, device.person)
