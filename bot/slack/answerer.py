"""The Slack answerer on its own, for a Python harness that has a `core.Context` but not the handraise program."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.channels.base import install_channel
from bot.questions.clock import Clock, SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.slack.channel import SlackChannel
from bot.slack.settings import SlackSettings
from bot.store.interface import AsyncStore
from bot.store.sqlite.async_store import SqliteStore
from core import Context


class SlackAnswerer:
    """`ctx.plugin(SlackAnswerer, settings)`: answers the requests `settings.subscriptions` route to Slack and
    passes the rest on with `next()`.

    Pending questions live in `store` (an in-memory one unless given; pass a file-backed `SqliteStore` to keep them
    across restarts). Mount `add_routes(app)` on an aiohttp app for HTTP mode, or await `run()` in a task for
    Socket Mode. Other keyword arguments go to `SlackChannel` (`client`, `signing_secret`, `app_token`, `environ`).
    Raises ConfigError when a secret the settings name is not in the environment.
    """

    def __init__(
        self,
        ctx: Context,
        settings: SlackSettings,
        *,
        store: AsyncStore | None = None,
        clock: Clock | None = None,
        **channel_options: Any,
    ) -> None:
        if store is None:
            memory = SqliteStore.open(":memory:")
            ctx.on_dispose(memory.sync.close)  # disposing is synchronous; closing SQLite needs no wait
            store = memory
        self.store = store
        self.ledger = Ledger(store, clock or SystemClock())
        self.channel = SlackChannel(settings, **channel_options)
        self.router = Router([SlackChannel.name], {SlackChannel.name: settings.subscriptions})
        install_channel(ctx, self.channel, self.router, self.ledger)

    def add_routes(self, app: web.Application) -> None:
        self.channel.add_routes(app)

    async def run(self) -> None:
        await self.channel.run()
