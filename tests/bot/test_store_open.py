"""`[store] url_env`: the store the config names is opened, SQLite by default and PostgreSQL when the variable holds
a URL; a missing or wrong variable is a ConfigError naming it, never showing its value."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import parse_config
from bot.settings.errors import ConfigError
from bot.store.open import open_store
from bot.store.postgres.store import PostgresStore
from bot.store.sqlite.async_store import SqliteStore

from .store_backends import record

pytestmark = pytest.mark.anyio


def config_with_url_env(tmp_path: Path) -> str:
    return f'[store]\npath = "{tmp_path / "handraise.db"}"\nurl_env = "HANDRAISE_DATABASE_URL"\n'


async def test_without_url_env_the_sqlite_file_is_opened(tmp_path: Path) -> None:
    config = parse_config(f'[store]\npath = "{tmp_path / "handraise.db"}"\n', environ={})
    store = await open_store(config, {"HANDRAISE_DATABASE_URL": "postgresql://ignored/db"})
    try:
        assert isinstance(store, SqliteStore)
        assert store.description == str(tmp_path / "handraise.db")
    finally:
        await store.close()


async def test_with_url_env_the_postgresql_database_is_opened(tmp_path: Path, postgres_url: str) -> None:
    config = parse_config(config_with_url_env(tmp_path), environ={"HANDRAISE_DATABASE_URL": postgres_url})
    store = await open_store(config, {"HANDRAISE_DATABASE_URL": postgres_url})
    try:
        assert isinstance(store, PostgresStore)
        original = record()
        await store.create_question(original)
        assert await store.get_question(original.id) == original
    finally:
        await store.close()
    assert not (tmp_path / "handraise.db").exists()


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({}, "is not set"),
        ({"HANDRAISE_DATABASE_URL": "  "}, "is empty"),
        ({"HANDRAISE_DATABASE_URL": "mysql://u:s3cr3t-value@h/db"}, "does not hold a postgresql:// URL"),
        ({"HANDRAISE_DATABASE_URL": "host=h password=s3cr3t-value"}, "does not hold a postgresql:// URL"),
    ],
)
async def test_a_missing_or_wrong_variable_is_a_config_error_naming_it(
    tmp_path: Path, environ: dict[str, str], problem: str
) -> None:
    config = parse_config(config_with_url_env(tmp_path), environ={}, check_environment=False)
    with pytest.raises(ConfigError) as raised:
        await open_store(config, environ)
    assert "HANDRAISE_DATABASE_URL" in str(raised.value) and problem in str(raised.value)
    assert raised.value.key == "store.url_env"
    assert "s3cr3t-value" not in str(raised.value)
