"""The web inbox as a registered kind: on by default, needing no secrets (its access link is made at start-up)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.web.settings import WebSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: WebSettings) -> Iterator[Secret]:
    return iter(())


def _build(settings: WebSettings, context: BuildContext) -> Channel:
    from bot.web.app import WebInbox

    return WebInbox(context.ledger, settings, titles=context.titles)


WEB = ChannelKind(
    name="web", title="the web inbox", settings=WebSettings, secrets=_secrets, build=_build, on_by_default=True
)
