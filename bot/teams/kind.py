"""The Teams channel as a registered kind: its `[teams]` table, the secrets it needs, and how it is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.teams.settings import TeamsSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: TeamsSettings) -> Iterator[Secret]:
    yield ("app_id_env",), settings.app_id_env
    yield ("app_password_env",), settings.app_password_env


def _build(settings: TeamsSettings, context: BuildContext) -> Channel:
    from bot.teams.channel import TeamsChannel  # PyJWT and the card code load only when Teams runs

    return TeamsChannel(settings, environ=context.environ)


TEAMS = ChannelKind(
    name="teams",
    title="Microsoft Teams",
    settings=TeamsSettings,
    secrets=_secrets,
    build=_build,
    commands={
        "conversations": (
            "bot.teams.conversations:print_conversations",
            "list the conversations the bot has been added to, as subscriptions to paste into the config",
        )
    },
)
