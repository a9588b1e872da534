"""The `[web]` table: the local inbox, on by default so that a bot with no config still answers every question."""

from __future__ import annotations

from pydantic import Field

from bot.settings import ChannelSettings, Subscription


class WebSubscription(Subscription):
    """A web inbox route: the inbox shows the request to the listed responders (everyone when empty)."""


class WebSettings(ChannelSettings[WebSubscription]):
    """The local web inbox, on by default so that a bot with no config still answers every question."""

    responders: list[str] = Field(default_factory=list)
