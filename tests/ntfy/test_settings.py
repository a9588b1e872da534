"""The [ntfy] table: the server, the token's variable and the topic, each mistake named with what to write."""

from __future__ import annotations

import pytest

from bot.config import parse_config
from bot.settings.errors import ConfigError

ENV = {"NTFY_TOKEN": "tk_x"}


def error_for(text: str, environ: dict[str, str] = ENV) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, path="config.toml", environ=environ)
    return str(caught.value)


def test_a_minimal_table_loads_with_ntfy_sh() -> None:
    config = parse_config('[ntfy]\n[[ntfy.subscriptions]]\ntopic = "handraise-x1"\n', path="c.toml", environ=ENV)
    assert config.ntfy is not None and config.ntfy.server == "https://ntfy.sh"
    (subscription,) = config.ntfy.subscriptions
    assert subscription.topic == "handraise-x1" and subscription.answerer == "ntfy:handraise-x1"
    assert "ntfy" in config.answerers


def test_the_token_must_be_in_the_environment() -> None:
    assert "NTFY_TOKEN is not set" in error_for("[ntfy]\n", environ={})


def test_a_token_in_the_file_is_refused() -> None:
    assert "secrets never go in the config file" in error_for('[ntfy]\ntoken = "tk_x"\n')


@pytest.mark.parametrize("topic", ['"a/b"', '""', '"has space"', '"' + "x" * 65 + '"', "7"])
def test_a_topic_that_is_not_a_topic_name_is_refused(topic: str) -> None:
    message = error_for(f"[ntfy]\n[[ntfy.subscriptions]]\ntopic = {topic}\n")
    assert "ntfy.subscriptions[0].topic" in message


@pytest.mark.parametrize("server", ['"ntfy.sh"', '"ftp://ntfy.sh"', '"https://"'])
def test_a_server_that_is_not_an_http_url_is_refused(server: str) -> None:
    message = error_for(f"[ntfy]\nserver = {server}\n")
    assert message.startswith("config.toml:2: ntfy.server:") and "https://ntfy.sh" in message
