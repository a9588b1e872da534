"""The `[discord]` table: the bot token's variable, the API's base URL, and the subscriptions (a channel to open
agents' threads in, and who may answer there)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from bot.settings.tables import ChannelSettings, EnvName, Subscription, quote_value, shaped

Snowflake = Annotated[
    str,
    shaped(
        r"[1-9][0-9]{5,19}",
        'is not a Discord id; turn on Developer Mode, right-click the channel and "Copy Channel ID" '
        "(docs/discord-setup.md), and write it as a string",
    ),
]
Responder = Annotated[
    str,
    shaped(
        r"(role:)?[1-9][0-9]{5,19}",
        'is not a Discord user id or "role:<role id>"; names change, so write the number, e.g. "80351110224678912" '
        'or "role:41771983423143936" (docs/discord-setup.md says how to copy them)',
    ),
]


class DiscordSubscription(Subscription):
    """A Discord route: a text channel in which each agent gets one public thread; `responders` are user ids and
    `role:<id>` entries (anyone whose member roles in the event include that role)."""

    channel: Snowflake
    responders: list[Responder] = Field(default_factory=list)


class DiscordSettings(ChannelSettings[DiscordSubscription]):
    """The Discord bot. It connects to the Gateway itself (no public URL); the application id comes from READY and
    the server from the channel."""

    bot_token_env: EnvName = "DISCORD_BOT_TOKEN"
    api_url: str = "https://discord.com/api"
    """Discord's REST API without the version (the client adds `/v10`); `http://` for a local fake in tests."""

    @field_validator("api_url")
    @classmethod
    def _check_api_url(cls, api_url: str) -> str:
        if not re.fullmatch(r"https?://[^/\s]+(/[^\s]*)?", api_url):
            raise ValueError(f'{quote_value(api_url)} is not an http(s) URL; write e.g. "https://discord.com/api"')
        return api_url.rstrip("/")
