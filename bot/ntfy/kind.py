"""The ntfy channel as a registered kind: its `[ntfy]` table, the secret it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.ntfy.settings import NtfySettings
from bot.settings.errors import ConfigError
from bot.settings.secrets import resolve_secret

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: NtfySettings) -> Iterator[Secret]:
    yield ("token_env",), settings.token_env


def _build(settings: NtfySettings, context: BuildContext) -> Channel:
    from bot.ntfy.channel import NtfyChannel  # aiohttp's server side loads only when ntfy runs

    if context.public_url is None:
        raise ConfigError(
            "the ntfy channel needs [server] public_url, the https:// address phones reach handraise by "
            "(its action buttons answer there); set it, or remove [ntfy]",
            key="server.public_url",
        )
    token = resolve_secret(settings.token_env, context.environ)
    return NtfyChannel(settings, token=token, public_url=context.public_url, titles=context.titles)


NTFY = ChannelKind(name="ntfy", title="ntfy", settings=NtfySettings, secrets=_secrets, build=_build)
