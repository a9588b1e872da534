"""Opening the store the config names: the SQLite file by default, PostgreSQL when `[store] url_env` is set."""

from __future__ import annotations

import os
from collections.abc import Mapping

from bot.settings.errors import ConfigError
from bot.settings.tables import Config
from bot.store.interface import AsyncStore
from bot.store.sqlite.async_store import SqliteStore

URL_SCHEMES = ("postgresql://", "postgres://")


async def open_store(config: Config, environ: Mapping[str, str] | None = None) -> AsyncStore:
    """Open (creating and migrating) the configured store.

    Raises ConfigError naming the variable when `url_env` is set but the variable is unset, empty or not a
    `postgresql://` URL (its value is never shown: it holds a password), and the store's own StoreError or
    StoreUnavailable when the database cannot be used.
    """
    name = config.store.url_env
    if name is None:
        return SqliteStore.open(config.store.path)
    env = os.environ if environ is None else environ
    url = env.get(name, "").strip()
    if not url:
        state = "is not set" if name not in env else "is empty"
        raise ConfigError(
            f"environment variable {name} {state}; export the postgresql:// URL of handraise's database in it",
            key="store.url_env",
        )
    if not url.lower().startswith(URL_SCHEMES):
        raise ConfigError(
            f"environment variable {name} does not hold a postgresql:// URL; "
            "write it as postgresql://USER:PASSWORD@HOST:5432/DATABASE",
            key="store.url_env",
        )
    # Imported here: psycopg and its pool take a fifth of a second to import, which SQLite users need not pay.
    from bot.store.postgres.store import PostgresStore

    return await PostgresStore.open(url)
