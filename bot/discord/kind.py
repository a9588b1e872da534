"""The Discord channel as a registered kind: its `[discord]` table, the secret it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.discord.settings import DiscordSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: DiscordSettings) -> Iterator[Secret]:
    yield ("bot_token_env",), settings.bot_token_env


def _build(settings: DiscordSettings, context: BuildContext) -> Channel:
    from bot.discord.channel import DiscordChannel  # the Gateway client loads only when Discord runs

    return DiscordChannel(settings, environ=context.environ)


DISCORD = ChannelKind(name="discord", title="Discord", settings=DiscordSettings, secrets=_secrets, build=_build)
