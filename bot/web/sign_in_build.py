"""Making the sign-in gate from `[web]`: its secrets read from the environment."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from bot.channels.kind import BuildContext
from bot.settings.errors import ConfigError
from bot.settings.secrets import resolve_secret
from bot.web.session import Sessions
from bot.web.settings import WebSettings
from bot.web.sign_in import SignIn

log = logging.getLogger("handraise.web.sign_in")


def build_sign_in(settings: WebSettings, context: BuildContext) -> SignIn:
    sign_in = settings.sign_in
    assert sign_in is not None
    client_secret = resolve_secret(sign_in.client_secret_env, context.environ)
    if settings.session_secret_env is not None:
        session_secret = resolve_secret(settings.session_secret_env, context.environ)
    elif context.store_path is not None:
        session_secret = kept_secret(Path(context.store_path))
    else:
        # PostgreSQL means replicas, which share sessions only through session_secret_env.
        session_secret = secrets.token_urlsafe(32)
        log.warning("web.session_secret_env is not set: sign-ins last until this replica restarts")
    sessions = Sessions(session_secret, settings.session_lifetime)
    return SignIn(sign_in, client_secret, sessions, context.public_url)


def kept_secret(store: Path) -> str:
    """The session secret kept beside the SQLite store (`handraise.db.session-secret`, readable by its owner only),
    made on first use: one replica's sign-ins then outlive its restarts without any configuration."""
    path = store.with_name(store.name + ".session-secret")
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        kept = path.read_text(encoding="ascii").strip()
        if len(kept) >= 32:
            return kept
        raise ConfigError(f"{path} holds no session secret; delete it and handraise makes a new one") from None
    made = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(made + "\n")
    return made
