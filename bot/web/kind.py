"""The web inbox as a registered kind: on by default, needing no secrets (its access link is made at start-up);
with `[web.sign_in]`, the provider's client secret, and the session secret when one is named."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from bot.channels.kind import BuildContext, ChannelKind, Secret
from bot.web.settings import WebSettings

if TYPE_CHECKING:
    from bot.channels.base import Channel


def _secrets(settings: WebSettings) -> Iterator[Secret]:
    if settings.sign_in is not None:
        yield ("sign_in", "client_secret_env"), settings.sign_in.client_secret_env
        if settings.session_secret_env is not None:
            yield ("session_secret_env",), settings.session_secret_env


def _build(settings: WebSettings, context: BuildContext) -> Channel:
    from bot.web.app import WebInbox

    sign_in = None
    if settings.sign_in is not None:
        from bot.web.sign_in_build import build_sign_in

        sign_in = build_sign_in(settings, context)
    return WebInbox(context.ledger, settings, titles=context.titles, sign_in=sign_in)


WEB = ChannelKind(
    name="web", title="the web inbox", settings=WebSettings, secrets=_secrets, build=_build, on_by_default=True
)
