"""The [teams] table: the app's secrets, the tenant and URLs, and each subscription's conversation, service URL and
responders, every mistake named with what to write."""

from __future__ import annotations

from textwrap import dedent

import pytest

from bot.config import parse_config
from bot.settings.errors import ConfigError

ENVIRON = {"TEAMS_APP_ID": "id", "TEAMS_APP_PASSWORD": "password"}
TABLE = '[teams]\ntenant_id = "contoso.example"\n'
ROUTE = '[[teams.subscriptions]]\nconversation = "19:a@thread.tacv2"\nservice_url = "https://smba.example/amer"\n'


def error_for(text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(dedent(text), path="config.toml", environ=ENVIRON if environ is None else environ)
    return str(caught.value)


def test_a_minimal_table_loads_with_bot_frameworks_defaults() -> None:
    config = parse_config(TABLE + ROUTE, path="c.toml", environ=ENVIRON)
    assert config.teams is not None
    assert config.teams.openid_metadata_url == "https://login.botframework.com/v1/.well-known/openidconfiguration"
    assert config.teams.token_endpoint == "https://login.microsoftonline.com/contoso.example/oauth2/v2.0/token"
    (route,) = config.teams.subscriptions
    assert route.service_url == "https://smba.example/amer/"


def test_a_token_url_is_used_exactly_as_given_and_http_is_accepted() -> None:
    text = TABLE + 'token_url = "http://127.0.0.1:9/t"\nopenid_metadata_url = "http://127.0.0.1:9/m"\n'
    config = parse_config(text, path="c.toml", environ=ENVIRON)
    assert config.teams is not None and config.teams.token_endpoint == "http://127.0.0.1:9/t"


@pytest.mark.parametrize("missing", ["TEAMS_APP_ID", "TEAMS_APP_PASSWORD"])
def test_the_app_id_and_password_must_be_in_the_environment(missing: str) -> None:
    environ = {name: value for name, value in ENVIRON.items() if name != missing}
    assert f"{missing} is not set" in error_for(TABLE, environ)


def test_the_tenant_is_required() -> None:
    assert "tenant_id" in error_for("[teams]\n")


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('tenant_id = "bad tenant"', "is not a tenant"),
        ('openid_metadata_url = "ftp://x"', "is not an http(s) URL"),
        ('token_url = "login.example"', "is not an http(s) URL"),
    ],
)
def test_a_bad_table_value_is_named(line: str, named: str) -> None:
    assert named in error_for("[teams]\n" + line + "\n" + ('tenant_id = "t"\n' if "tenant_id" not in line else ""))


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('conversation = "19:a b"', "is not a conversation id"),
        ('service_url = "smba.example"', "is not an http(s) URL"),
        ('responders = ["alice"]', "is not a Teams responder"),
        ('responders = ["29:1abc"]', "is not a Teams responder"),
    ],
)
def test_a_bad_subscription_value_is_named(line: str, named: str) -> None:
    key = line.split(" ")[0]
    route = "\n".join(entry for entry in ROUTE.splitlines() if not entry.startswith(key)) + "\n" + line + "\n"
    message = error_for(TABLE + route)
    assert named in message and f"teams.subscriptions[0].{key}" in message


def test_responders_take_emails_object_ids_and_domains() -> None:
    line = 'responders = ["alice@example.org", "8c0f2b6e-1d2a-4c53-9e1f-2a3b4c5d6e7f", "@example.org"]\n'
    config = parse_config(TABLE + ROUTE + line, path="c.toml", environ=ENVIRON)
    assert config.teams is not None and len(config.teams.subscriptions[0].responders) == 3
