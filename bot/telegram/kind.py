"""The Telegram channel as a registered kind: its `[telegram]` table, the secrets it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.telegram.settings import TelegramSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: TelegramSettings) -> Iterator[Secret]:
    yield ("bot_token_env",), settings.bot_token_env
    if settings.mode == "webhook" and settings.webhook_secret_env is not None:
        yield ("webhook_secret_env",), settings.webhook_secret_env


def _build(settings: TelegramSettings, context: BuildContext) -> Channel:
    from bot.telegram.channel import TelegramChannel  # python-telegram-bot loads only when Telegram runs

    return TelegramChannel(settings, environ=context.environ)


TELEGRAM = ChannelKind(name="telegram", title="Telegram", settings=TelegramSettings, secrets=_secrets, build=_build)
