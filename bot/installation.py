"""Put the configured answerers on a `Context`, for `handraise serve` and for Python harnesses embedding handraise."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from bot.channels.base import Channel, install_channel
from bot.channels.kind import BuildContext
from bot.config import Config
from bot.kinds import KINDS
from bot.questions.clock import Clock, SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.settings.errors import ConfigError
from bot.store.interface import AsyncStore
from bot.store.sqlite.async_store import SqliteStore
from core import Context, PluginHandle

log = logging.getLogger(__name__)


@dataclass
class Installation:
    """What `install` put on the context. Await `run()` in a task group for the channels' background work, and
    `close()` once the program stops."""

    config: Config
    store: AsyncStore
    ledger: Ledger
    router: Router
    channels: list[Channel] = field(default_factory=list[Channel])

    def channel(self, name: str) -> Channel | None:
        return next((channel for channel in self.channels if channel.name == name), None)

    def links(self, base_url: str) -> dict[str, str]:
        """Every channel's pages (the web inbox's access link), by what they are."""
        return {title: url for channel in self.channels for title, url in channel.links(base_url).items()}

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for channel in self.channels:
                group.start_soon(channel.run, name=f"{channel.name} channel")

    async def close(self) -> None:
        """Close every channel; one that fails to close is logged and the others still close."""
        for channel in self.channels:
            try:
                await channel.close()
            except Exception:
                log.exception("the %s channel did not close cleanly", channel.name)


def build_channels(config: Config, ledger: Ledger, environ: Mapping[str, str] | None = None) -> list[Channel]:
    """One channel per configured answerer, in waterfall order, each built by its registered kind.

    Raises ConfigError for a channel this version cannot run, or one whose secrets are missing.
    """
    channels: list[Channel] = []
    context = BuildContext(ledger, environ, KINDS.titles, config.server.public_url)
    for name in config.answerers:
        kind, settings = KINDS.get(name), config.channel(name)
        if kind is None or settings is None:
            raise ConfigError(
                f"bot.answerers: the {name} channel is not available in this version of handraise yet; "
                f"remove it from bot.answerers (or its [{name}] table) to run with the others"
            )
        channels.append(kind.build(settings, context))
    return channels


def install(
    ctx: Context,
    config: Config,
    *,
    store: AsyncStore | None = None,
    clock: Clock | None = None,
    channels: Sequence[Channel] | None = None,
) -> PluginHandle:
    """Register the configured answerers on `ctx` (which must provide `user_questions`); returns the plugin handle.

    `handle.value` is the `Installation`; disposing the handle removes the answerers and closes a store it opened
    (a store passed in is the caller's to close).
    """

    def apply(child: Context) -> Installation:
        opened: AsyncStore
        if store is None:
            own = SqliteStore.open(config.store.path)
            # Disposing is synchronous, and closing a SQLite file needs no wait: close the store underneath.
            child.on_dispose(own.sync.close)
            opened = own
        else:
            opened = store
        ledger = Ledger(opened, clock or SystemClock())
        router = Router.from_config(config)
        chosen = list(channels) if channels is not None else build_channels(config, ledger)
        for channel in chosen:
            install_channel(child, channel, router, ledger)
        return Installation(config, opened, ledger, router, chosen)

    return ctx.plugin(apply)
