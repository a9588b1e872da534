"""The [discord] table: the channel, responders and api_url, each mistake named with what to write."""

from __future__ import annotations

from textwrap import dedent

import pytest

from bot.config import parse_config
from bot.settings.errors import ConfigError

ENV = {"DISCORD_BOT_TOKEN": "MTIz.x.y"}


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(dedent(text), path="config.toml", environ=ENV)
    return str(caught.value)


def test_a_minimal_table_loads_with_discords_api() -> None:
    config = parse_config(
        '[discord]\n[[discord.subscriptions]]\nchannel = "1234567890123456789"\n'
        'responders = ["80351110224678912", "role:41771983423143936"]\n',
        path="c.toml",
        environ=ENV,
    )
    assert config.discord is not None and config.discord.api_url == "https://discord.com/api"
    (subscription,) = config.discord.subscriptions
    assert subscription.channel == "1234567890123456789"
    assert subscription.responders == ["80351110224678912", "role:41771983423143936"]
    assert "discord" in config.answerers


def test_the_bot_token_must_be_in_the_environment() -> None:
    with pytest.raises(ConfigError, match="DISCORD_BOT_TOKEN is not set"):
        parse_config("[discord]\n", path="config.toml", environ={})


@pytest.mark.parametrize("channel", ['"general"', '"#agents"', "1234567890123456789", '"0123"', '""'])
def test_a_channel_must_be_an_id_written_as_a_string(channel: str) -> None:
    message = error_for(f"[discord]\n[[discord.subscriptions]]\nchannel = {channel}\n")
    assert "config.toml:3" in message and "channel" in message


@pytest.mark.parametrize("responder", ["alice", "@alice", "role:admins", "<@80351110224678912>", "role:"])
def test_a_responder_is_a_user_id_or_a_role_id(responder: str) -> None:
    message = error_for(
        f'[discord]\n[[discord.subscriptions]]\nchannel = "1234567890123456789"\nresponders = ["{responder}"]\n'
    )
    assert "role:<role id>" in message


def test_api_url_must_be_http_and_loses_its_trailing_slash() -> None:
    assert "is not an http(s) URL" in error_for('[discord]\napi_url = "ftp://discord.example"\n')
    config = parse_config('[discord]\napi_url = "http://127.0.0.1:9/api/"\n', path="c.toml", environ=ENV)
    assert config.discord is not None and config.discord.api_url == "http://127.0.0.1:9/api"
