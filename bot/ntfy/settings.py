"""The `[ntfy]` table: the server, the access token's variable, and the subscriptions (a topic, and who holds the
phones subscribed to it)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import field_validator

from bot.settings.tables import ChannelSettings, EnvName, Subscription, quote_value, shaped

Topic = Annotated[
    str,
    shaped(
        r"[-_A-Za-z0-9]{1,64}",
        "is not an ntfy topic name: 1 to 64 letters, digits, '-' or '_'; on a public server the topic is the "
        "password, so make it long and hard to guess (docs/ntfy.md)",
    ),
]


class NtfySubscription(Subscription):
    """An ntfy route: the topic questions are published to. A tap on a phone carries no name, so `person` says who
    holds the phones subscribed to it: that is who answered (and it is checked against `responders`)."""

    topic: Topic
    person: str | None = None
    """Recorded as who answered a tap on this topic; unset, `ntfy:<topic>`."""

    @property
    def answerer(self) -> str:
        return self.person or f"ntfy:{self.topic}"


class NtfySettings(ChannelSettings[NtfySubscription]):
    """The ntfy server handraise publishes to; taps come back to `[server] public_url`."""

    server: str = "https://ntfy.sh"
    """The ntfy server's root URL (ntfy.sh or your own); questions are published there as JSON."""
    token_env: EnvName = "NTFY_TOKEN"
    """The environment variable holding an ntfy access token (`tk_…`) allowed to publish to the topics."""

    @field_validator("server")
    @classmethod
    def _check_server(cls, server: str) -> str:
        if not re.fullmatch(r"https?://[^/\s]+(/[^\s]*)?", server):
            raise ValueError(f'{quote_value(server)} is not an http(s) URL; write e.g. "https://ntfy.sh"')
        return server.rstrip("/")
