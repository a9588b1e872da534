"""Making the sign-in gate from `[web]`: its secrets read from the environment."""

from __future__ import annotations

import secrets

from bot.channels.kind import BuildContext
from bot.settings.secrets import resolve_secret
from bot.web.session import Sessions
from bot.web.settings import WebSettings
from bot.web.sign_in import SignIn


def build_sign_in(settings: WebSettings, context: BuildContext) -> SignIn:
    """The gate, with the session secret from `session_secret_env`; without one, a key of the moment that the inbox
    replaces by the one kept in the store before the server listens (`WebInbox.prepare`)."""
    sign_in = settings.sign_in
    assert sign_in is not None
    client_secret = resolve_secret(sign_in.client_secret_env, context.environ)
    if settings.session_secret_env is not None:
        session_secret = resolve_secret(settings.session_secret_env, context.environ)
    else:
        session_secret = secrets.token_urlsafe(32)
    sessions = Sessions(session_secret, settings.session_lifetime)
    return SignIn(sign_in, client_secret, sessions, context.public_url)
