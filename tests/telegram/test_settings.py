"""The [telegram] table: chats, topics, responders and the webhook, each mistake named with what to write."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from bot.channels.kind import BuildContext
from bot.config import parse_config
from bot.questions.ledger import Ledger
from bot.settings.errors import ConfigError
from bot.store.sqlite.async_store import SqliteStore
from bot.telegram.channel import TelegramChannel
from bot.telegram.kind import TELEGRAM
from bot.telegram.settings import TelegramSettings
from tests.bot.fakes import sync_store
from tests.fake_clock import FakeClock


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(dedent(text), path="config.toml", environ={"TELEGRAM_BOT_TOKEN": "1:x"})
    return str(caught.value)


def test_a_minimal_table_loads_with_polling_by_default() -> None:
    config = parse_config(
        "[telegram]\n[[telegram.subscriptions]]\nchat = 42\n", path="c.toml", environ={"TELEGRAM_BOT_TOKEN": "1:x"}
    )
    assert config.telegram is not None and config.telegram.mode == "polling"
    assert config.telegram.subscriptions[0].chat == 42


def test_the_bot_token_must_be_in_the_environment() -> None:
    with pytest.raises(ConfigError, match="TELEGRAM_BOT_TOKEN is not set"):
        parse_config("[telegram]\n", path="config.toml", environ={})


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('chat = "deploys"', "is not a chat"),
        ("chat = 0", "0 is not a chat id"),
        ('chat = 1\nresponders = ["@alice"]', "is not a Telegram user id"),
        ("chat = 1\nresponders = [111]", "responders"),
        ('chat = 1\ntopic = "request"', "topic"),
        ("chat = 1\ntopic = -3", "is not a topic id"),
    ],
)
def test_a_bad_subscription_is_refused_naming_the_key(line: str, problem: str) -> None:
    assert problem in error_for(f"[telegram]\n[[telegram.subscriptions]]\n{line}\n")


def test_a_subscription_needs_a_chat() -> None:
    assert "chat" in error_for("[telegram]\n[[telegram.subscriptions]]\nresponders = []\n")


def test_the_webhook_url_must_be_https() -> None:
    assert "is not an https URL" in error_for('[telegram]\nwebhook_url = "http://x.example/telegram/webhook"\n')


def test_webhook_mode_needs_its_secret_in_the_environment() -> None:
    text = '[telegram]\nmode = "webhook"\nwebhook_url = "https://x.example/h"\nwebhook_secret_env = "HOOK"\n'
    assert "HOOK is not set" in error_for(text)


def test_the_kind_builds_the_channel_with_its_secrets_from_the_environment(tmp_path: Path) -> None:
    settings = TelegramSettings(
        mode="webhook",
        webhook_url="https://x.example/telegram/webhook",
        webhook_secret_env="HOOK",
        api_url="http://127.0.0.1:9",
    )
    ledger = Ledger(SqliteStore.open(tmp_path / "h.db"), FakeClock())
    channel = TELEGRAM.build(settings, BuildContext(ledger, environ={"TELEGRAM_BOT_TOKEN": "1:abc", "HOOK": "s3"}))
    assert isinstance(channel, TelegramChannel)
    assert channel.webhook_secret == "s3"
    assert channel.transport.bot.base_url == "http://127.0.0.1:9/bot1:abc"
    assert [secret for _, secret in TELEGRAM.secrets(settings)] == ["TELEGRAM_BOT_TOKEN", "HOOK"]
    sync_store(ledger.store).close()
