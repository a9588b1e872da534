"""The email channel as a registered kind: its `[email]` table, the secrets it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.email.settings import EmailSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: EmailSettings) -> Iterator[Secret]:
    yield ("token_secret_env",), settings.token_secret_env
    if settings.smtp.password_env is not None:
        yield ("smtp", "password_env"), settings.smtp.password_env
    yield ("imap", "password_env"), settings.imap.password_env


def _build(settings: EmailSettings, context: BuildContext) -> Channel:
    from bot.email.channel import EmailChannel

    return EmailChannel.from_settings(settings, context.environ)


EMAIL = ChannelKind(name="email", title="email", settings=EmailSettings, secrets=_secrets, build=_build)
