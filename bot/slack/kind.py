"""The Slack channel as a registered kind: its `[slack]` table, the secrets it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.slack.settings import SlackSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: SlackSettings) -> Iterator[Secret]:
    yield ("bot_token_env",), settings.bot_token_env
    if settings.mode == "socket" and settings.app_token_env is not None:
        yield ("app_token_env",), settings.app_token_env
    if settings.mode == "http" and settings.signing_secret_env is not None:
        yield ("signing_secret_env",), settings.signing_secret_env


def _build(settings: SlackSettings, context: BuildContext) -> Channel:
    from bot.slack.channel import SlackChannel  # slack-bolt is slow to import: only when Slack runs

    return SlackChannel(settings, environ=context.environ)


SLACK = ChannelKind(name="slack", title="Slack", settings=SlackSettings, secrets=_secrets, build=_build)
