"""Web Push as the inbox holds it: the kept VAPID key read once, the routes, and the fan-out run in the channel's
task group."""

from __future__ import annotations

import logging

import anyio
from aiohttp import web

from bot.channels.base import Channel
from bot.store.errors import StoreUnavailable
from bot.store.records import QuestionRecord
from bot.web.push.answer_tokens import AnswerTokens
from bot.web.push.fanout import QUEUED, Fanout
from bot.web.push.keys import VapidKeys, kept_keys
from bot.web.push.routes import PushRoutes
from bot.web.push.sender import PushSender
from bot.web.push_settings import PushSettings
from bot.web.sign_in import SignIn

log = logging.getLogger("handraise.web.push")

KEY_RETRY_SECONDS = 5.0


class WebPush:
    """Pushes the inbox's new questions to signed-in people's devices, and takes their answers from the buttons."""

    def __init__(self, channel: Channel, settings: PushSettings, gate: SignIn, public_url: str | None = None) -> None:
        self.channel = channel
        self.settings = settings
        self.gate = gate
        self.public_url = public_url
        self._keys: VapidKeys | None = None
        self._tokens: AnswerTokens | None = None
        self._reading = anyio.Lock()
        self._fanout: Fanout | None = None
        self._sender: PushSender | None = None
        self._early: list[QuestionRecord] = []
        self._started = anyio.Event()

    async def keys(self) -> VapidKeys:
        """The kept key pair, made and kept on the first start of the first replica."""
        if self._keys is None:
            async with self._reading:
                if self._keys is None:
                    self._keys = await kept_keys(self.channel.ledger.store, self.settings.subject)
                    self._tokens = AnswerTokens(self._keys.secret)
        return self._keys

    async def ready(self) -> tuple[str, AnswerTokens]:
        keys = await self.keys()
        assert self._tokens is not None
        return keys.public_key, self._tokens

    def add_routes(self, app: web.Application) -> None:
        store = self.channel.ledger.store
        PushRoutes(self.channel, self.gate, store, self.ready, self.public_url).add_routes(app)

    def announce(self, record: QuestionRecord) -> None:
        """Push `record` in the background (never waits)."""
        if self._fanout is None:
            if len(self._early) < QUEUED:
                self._early.append(record)  # asked before the key was read: pushed once it is
            return
        self._fanout.announce(record)

    async def run(self) -> None:
        """Read the kept key (making it on the first start), then push announced questions until cancelled."""
        while True:
            try:
                keys = await self.keys()
                break
            except StoreUnavailable as down:
                log.warning("web push waits for the store to read its key: %s", down.message)
                await anyio.sleep(KEY_RETRY_SECONDS)
        assert self._tokens is not None
        self._sender = PushSender(keys)
        fanout = Fanout(
            self.channel,
            self.channel.ledger.store,
            self._sender,
            self._tokens,
            self.gate.settings.allows,
            self.public_url or "",
        )
        for record in self._early:
            fanout.announce(record)
        self._early.clear()
        self._fanout = fanout
        self._started.set()
        await fanout.run()

    async def settled(self) -> None:
        """Wait until the questions announced so far are pushed (tests and the bench use it)."""
        await self._started.wait()
        assert self._fanout is not None
        await self._fanout.settled()

    async def close(self) -> None:
        if self._sender is not None:
            await self._sender.close()
