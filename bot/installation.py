"""Put the configured answerers on a `Context`, for `handraise serve` and for Python harnesses embedding handraise."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from bot.channel import Channel, install_channel
from bot.clock import Clock, SystemClock
from bot.config import Config, ConfigError
from bot.ledger import Ledger
from bot.routing import Router
from bot.store import Store
from core import Context, PluginHandle

if TYPE_CHECKING:
    from bot.web import WebInbox

log = logging.getLogger(__name__)


@dataclass
class Installation:
    """What `install` put on the context. Await `run()` in a task group for the channels' background work."""

    config: Config
    store: Store
    ledger: Ledger
    router: Router
    channels: list[Channel] = field(default_factory=list[Channel])
    inbox: WebInbox | None = None

    def channel(self, name: str) -> Channel | None:
        return next((channel for channel in self.channels if channel.name == name), None)

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for channel in self.channels:
                group.start_soon(channel.run, name=f"{channel.name} channel")


def build_channels(config: Config, ledger: Ledger) -> tuple[list[Channel], WebInbox | None]:
    """One channel per configured answerer, in waterfall order, and the web inbox when it is one of them.

    Raises ConfigError for a channel this version cannot run.
    """
    channels: list[Channel] = []
    inbox: WebInbox | None = None
    for name in config.answerers:
        if name == "web":
            from bot.web import WebInbox

            inbox = WebInbox(ledger, config.web)
            channels.append(inbox.channel)
        elif name == "slack" and config.slack is not None:
            from bot.slack import SlackChannel

            channels.append(SlackChannel(config.slack))
        elif name == "email" and config.email is not None:
            from bot.email.channel import EmailChannel

            channels.append(EmailChannel.from_settings(config.email))
        else:
            raise ConfigError(
                f"bot.answerers: the {name} channel is not available in this version of handraise yet; "
                f"remove it from bot.answerers (or its [{name}] table) to run with the others"
            )
    return channels, inbox


def install(
    ctx: Context,
    config: Config,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
    channels: Sequence[Channel] | None = None,
) -> PluginHandle:
    """Register the configured answerers on `ctx` (which must provide `user_questions`); returns the plugin handle.

    `handle.value` is the `Installation`; disposing the handle removes the answerers and closes a store it opened.
    """

    def apply(child: Context) -> Installation:
        own_store = store is None
        opened = store if store is not None else Store.open(config.store.path)
        if own_store:
            child.on_dispose(opened.close)
        ledger = Ledger(opened, clock or SystemClock())
        router = Router.from_config(config)
        chosen, inbox = (list(channels), None) if channels is not None else build_channels(config, ledger)
        for channel in chosen:
            install_channel(child, channel, router, ledger)
        return Installation(config, opened, ledger, router, chosen, inbox)

    return ctx.plugin(apply)
