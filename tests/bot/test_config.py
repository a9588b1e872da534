"""The config file: defaults, the example, every error message, and which requests a subscription takes."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from textwrap import dedent

import pytest
from pydantic import BaseModel, ValidationError

from bot.config import Config, ServerSettings, Subscription, load_config, parse_config
from bot.settings.durations import format_duration, parse_duration
from bot.settings.errors import ConfigError
from bot.settings.secrets import resolve_secret

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"
EXAMPLE_ENV = {
    name: "not-a-real-secret"
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "TELEGRAM_BOT_TOKEN",
        "TEAMS_APP_ID",
        "TEAMS_APP_PASSWORD",
        "HANDRAISE_EMAIL_SECRET",
        "HANDRAISE_SMTP_PASSWORD",
        "HANDRAISE_IMAP_PASSWORD",
    )
}
SLACK_ENV = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "test"}


def error_for(text: str, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(dedent(text), path="config.toml", environ=environ if environ is not None else {})
    return caught.value


# Defaults and the example file


def test_no_config_file_runs_the_web_inbox_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(None, environ={})
    assert config.answerers == ["web"]
    assert (config.slack, config.email) == (None, None)
    assert config.web.subscriptions == []
    assert (config.server.host, config.server.port, config.server.is_loopback) == ("127.0.0.1", 8765, True)
    assert config.store.path == str(tmp_path / "handraise.db")


def test_example_file_loads_with_its_environment_variables_set() -> None:
    config = load_config(EXAMPLE, environ=EXAMPLE_ENV)
    assert config.answerers == ["slack", "telegram", "teams", "email", "web"]
    assert config.store.path == str(EXAMPLE.parent / "handraise.db")
    assert config.slack is not None and config.email is not None
    deploys, infra = config.slack.subscriptions
    assert (deploys.agents, deploys.channel, deploys.escalate_after) == (
        ["deploy-*"],
        "#deploys",
        timedelta(minutes=30),
    )
    assert (infra.labels, infra.user, infra.channel) == ({"team": "infra"}, "U0789IJKL", None)
    assert config.email.subscriptions[0].to == ["oncall@example.org"]
    assert config.email.imap.poll_interval == timedelta(seconds=60)
    assert config.telegram is not None
    (release,) = config.telegram.subscriptions
    assert (release.chat, release.topic, release.responders) == (-1001234567890, "agent", ["111111111", "222222222"])


def reachable_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    """`model` and every model its fields hold, however deep (each registered channel's tables included)."""
    found = {model}
    for field in model.model_fields.values():
        for inner in _models_in(field.annotation):
            if inner not in found:
                found |= reachable_models(inner)
    return found


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in getattr(annotation, "__args__", ()) for model in _models_in(arg)]


def test_example_file_documents_every_key() -> None:
    text = EXAMPLE.read_text()
    keys = {name for model in reachable_models(Config) for name in model.model_fields}
    assert {"processed_folder", "trusted_authserv_id", "mention", "api_token_env", "agentless", "smtp"} <= keys
    for key in sorted(keys):
        # A key is documented by an assignment or a table header, commented out or not.
        assert re.search(rf"^[#\s]*(\[+[\w.]*\b{key}\]+|{key}\s*=)", text, re.MULTILINE), key


def test_example_file_without_an_environment_variable_names_the_key_that_needs_it() -> None:
    line = EXAMPLE.read_text().splitlines().index('bot_token_env = "SLACK_BOT_TOKEN"') + 1
    env = {name: value for name, value in EXAMPLE_ENV.items() if name != "SLACK_BOT_TOKEN"}
    with pytest.raises(ConfigError) as caught:
        load_config(str(EXAMPLE), environ=env)
    assert (caught.value.key, caught.value.line) == ("slack.bot_token_env", line)
    assert str(caught.value) == (
        f"{EXAMPLE}:{line}: slack.bot_token_env: environment variable SLACK_BOT_TOKEN is not set; "
        "export it (the token itself never goes in the file)"
    )


def test_relative_store_path_is_resolved_against_the_config_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "etc" / "config.toml").write_text('[store]\npath = "data/questions.db"\n')
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_config(Path("..") / "etc" / "config.toml", environ={})
    assert config.store.path == str(tmp_path / "etc" / "data" / "questions.db")


def test_absolute_store_path_is_kept() -> None:
    assert parse_config('[store]\npath = "/var/lib/handraise.db"\n', environ={}).store.path == "/var/lib/handraise.db"


def test_missing_config_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.toml", environ={})
    assert str(caught.value) == (
        f"{tmp_path / 'nope.toml'}: no such config file; copy config.example.toml there, "
        "or give no config to run the web inbox alone"
    )


# One test per error message


def test_config_error_carries_a_stable_code_and_its_location() -> None:
    err = error_for("[web]\nenabled = true\ncolour = 'blue'\n")
    assert (err.code, err.path, err.key, err.line) == ("BAD_CONFIG", "config.toml", "web.colour", 3)


def test_unknown_key_is_named_with_its_line_and_a_suggestion() -> None:
    err = error_for(
        """\
        [slack]
        mode = "socket"
        app_token_env = "SLACK_APP_TOKEN"

        [[slack.subscriptions]]
        channel = "#deploys"

        [[slack.subscriptions]]
        chanel = "#infra"
        """
    )
    assert str(err) == 'config.toml:9: slack.subscriptions[1].chanel: unknown key; did you mean "channel"?'


def test_bad_glob_is_named_with_its_index() -> None:
    err = error_for('[[web.subscriptions]]\nagents = ["deploy-*", "build-[0-9"]\n')
    assert str(err) == (
        'config.toml:2: web.subscriptions[0].agents[1]: "build-[0-9" is a bad glob: unbalanced [ ]; '
        'write e.g. "deploy-*" or "build-[0-9]"'
    )


def test_bad_duration_says_how_to_write_one() -> None:
    err = error_for(
        """\
        [slack]

        [[slack.subscriptions]]
        channel = "#deploys"
        escalate_after = "30 minutes"
        """,
        environ=SLACK_ENV,
    )
    assert str(err) == (
        'config.toml:5: slack.subscriptions[0].escalate_after: "30 minutes" is not a duration; '
        'write e.g. "30s", "30m", "2h", "1d" or "1h30m"'
    )


def test_expiry_must_come_after_escalation() -> None:
    err = error_for('[[web.subscriptions]]\nescalate_after = "1h"\nexpire_after = "60m"\n')
    assert str(err) == (
        'config.toml:3: web.subscriptions[0].expire_after: "1h" is not longer than escalate_after = "1h", '
        "so the request would expire before it escalates; raise expire_after or lower escalate_after"
    )


def test_slack_subscription_needs_a_destination() -> None:
    err = error_for('[slack]\n\n[[slack.subscriptions]]\nagents = ["deploy-*"]\n', environ=SLACK_ENV)
    assert (
        str(err) == 'config.toml:3: slack.subscriptions[0]: give a destination: channel = "#deploys" or user = "U0123"'
    )


def test_missing_environment_variable_is_named_with_the_key_that_names_it() -> None:
    err = error_for('[slack]\nbot_token_env = "MY_BOT_TOKEN"\n', environ={"SLACK_SIGNING_SECRET": "s"})
    assert str(err) == (
        "config.toml:2: slack.bot_token_env: environment variable MY_BOT_TOKEN is not set; "
        "export it (the token itself never goes in the file)"
    )


def test_environment_of_a_channel_that_does_not_run_is_not_required() -> None:
    config = parse_config('[slack]\nenabled = false\n[bot]\nanswerers = ["web"]\n', environ={})
    assert config.answerers == ["web"]


def test_literal_secret_in_the_file_is_refused() -> None:
    err = error_for('[slack]\nbot_token = "xoxb-123"\n')
    assert str(err) == (
        "config.toml:2: slack.bot_token: secrets never go in the config file; "
        'set bot_token_env = "NAME" and export NAME'
    )


@pytest.mark.parametrize(
    ("listen", "message"),
    [
        ("8765", '"8765" is not host:port; write e.g. "127.0.0.1:8765" or "[::1]:8765"'),
        ("localhost:99999", '"localhost:99999": port 99999 is out of range; use 0-65535 (0 picks a free port)'),
        ("::1:8765", '"::1:8765" is a bare IPv6 address; put it in brackets, e.g. "[::1]:8765"'),
        ("[nope]:8765", '"[nope]:8765": "nope" is not an IPv6 address; write e.g. "[::1]:8765"'),
    ],
)
def test_bad_listen_address_says_how_to_write_one(listen: str, message: str) -> None:
    assert str(error_for(f'[server]\nlisten = "{listen}"\n')) == f"config.toml:2: server.listen: {message}"


@pytest.mark.parametrize(
    ("listen", "host", "port", "loopback"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765, True),
        ("127.3.2.1:0", "127.3.2.1", 0, True),
        ("[::1]:80", "::1", 80, True),
        ("localhost:8765", "localhost", 8765, True),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False),
        ("[::]:8765", "::", 8765, False),
        ("bot.internal:8765", "bot.internal", 8765, False),
    ],
)
def test_listen_address_parts(listen: str, host: str, port: int, loopback: bool) -> None:
    server = ServerSettings(listen=listen, api_token_env="HANDRAISE_API_TOKEN")
    assert (server.host, server.port, server.is_loopback) == (host, port, loopback)


def test_listening_beyond_loopback_requires_an_api_token() -> None:
    err = error_for('[server]\nlisten = "0.0.0.0:8765"\n')
    assert str(err) == (
        "config.toml:1: server.api_token_env: required when server.listen is not a loopback address "
        '(anyone on the network could answer); set api_token_env = "NAME" and export NAME'
    )


def test_api_token_env_must_be_set_when_named() -> None:
    text = '[server]\nlisten = "0.0.0.0:8765"\napi_token_env = "HANDRAISE_API_TOKEN"\n'
    assert str(error_for(text)).startswith("config.toml:3: server.api_token_env: environment variable")
    assert parse_config(text, environ={"HANDRAISE_API_TOKEN": "t"}).server.is_loopback is False


def test_answerers_naming_an_absent_channel_is_refused() -> None:
    err = error_for('[bot]\nanswerers = ["slack", "web"]\n')
    assert str(err) == (
        "config.toml:2: bot.answerers: 'slack' is listed but there is no [slack] table; "
        "configure it or remove 'slack' from bot.answerers"
    )


def test_answerers_naming_an_unknown_channel_is_refused() -> None:
    err = error_for('[bot]\nanswerers = ["web", "sms"]\n')
    assert str(err) == (
        'config.toml:2: bot.answerers[1]: "sms" is not a channel; '
        'use "slack", "telegram", "teams", "discord", "ntfy", "email" or "web"'
    )


def test_toml_syntax_error_gives_its_line() -> None:
    err = error_for('[server]\nlisten = "127.0.0.1:8765"\napi_token_env = \n')
    assert (err.line, err.key) == (3, None)
    assert str(err) == "config.toml:3: not valid TOML (invalid value); check the quotes, brackets, commas and = signs"


def test_slack_responders_must_be_ids_not_names() -> None:
    err = error_for('[slack]\n[[slack.subscriptions]]\nuser = "U0123"\nresponders = ["U0123", "alice"]\n')
    assert err.key == "slack.subscriptions[0].responders[1]"
    assert err.message.startswith('"alice" is not a Slack user id; names change, so write ids like "U0123ABCD"')


def test_email_subscription_needs_a_valid_address() -> None:
    text = """\
        [email]
        address = "handraise@example.org"
        smtp = { host = "smtp.example.org" }
        imap = { host = "imap.example.org", username = "bot", password_env = "IMAP_PASSWORD" }
        [[email.subscriptions]]
        to = ["oncall at example.org"]
        """
    err = error_for(text)
    assert str(err) == (
        'config.toml:6: email.subscriptions[0].to[0]: "oncall at example.org" is not an email address; '
        'write e.g. "oncall@example.org"'
    )


def test_missing_table_is_named() -> None:
    err = error_for('[email]\naddress = "handraise@example.org"\n[email.imap]\nhost = "imap"\n')
    assert str(err) == "config.toml:1: email.smtp: is required; add a [email.smtp] table"


def test_resolve_secret_reads_the_environment() -> None:
    assert resolve_secret("MY_SECRET", {"MY_SECRET": "s3"}) == "s3"
    with pytest.raises(ConfigError) as caught:
        resolve_secret("MY_SECRET", {})
    assert str(caught.value) == (
        "environment variable MY_SECRET is not set; export it (the secret itself never goes in the file)"
    )


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        Config().web.enabled = False  # type: ignore[misc]


# Durations


@pytest.mark.parametrize(
    ("text", "expected", "written"),
    [
        ("45s", timedelta(seconds=45), "45s"),
        ("30m", timedelta(minutes=30), "30m"),
        ("2h", timedelta(hours=2), "2h"),
        ("1d", timedelta(days=1), "1d"),
        ("1h30m", timedelta(hours=1, minutes=30), "1h30m"),
        ("90m", timedelta(minutes=90), "1h30m"),
    ],
)
def test_durations_round_trip(text: str, expected: timedelta, written: str) -> None:
    assert parse_duration(text) == expected
    assert format_duration(expected) == written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("90", '"90" is not a duration; write e.g. "30s", "30m", "2h", "1d" or "1h30m"'),
        ("30m1h", '"30m1h" is not a duration; write e.g. "30s", "30m", "2h", "1d" or "1h30m"'),
        ("", '"" is not a duration; write e.g. "30s", "30m", "2h", "1d" or "1h30m"'),
        ("0s", '"0s" is not a positive duration; write e.g. "30s", "30m", "2h", "1d" or "1h30m"'),
    ],
)
def test_bad_durations_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


# Routing: which requests a subscription takes

AGENTS: dict[str, tuple[str | None, str | None, dict[str, str]]] = {
    "deploy-id": ("deploy-7f3a", "release bot", {"team": "infra"}),
    "deploy-name": ("a1b2c3", "deploy-bot", {}),
    "builder": ("build-1", "builder", {"team": "web"}),
    "agentless": (None, None, {}),
}
# Columns follow AGENTS: deploy-id, deploy-name, builder, agentless.
ROUTES: dict[str, tuple[dict[str, object], str]] = {
    "every request": ({}, "yes yes yes yes"),
    "agents deploy-*": ({"agents": ["deploy-*"]}, "yes yes no  no"),
    "case-sensitive glob": ({"agents": ["Deploy-*"]}, "no  no  no  no"),
    "agents with labels team=infra": ({"labels": {"team": "infra"}}, "yes no  no  no"),
    "glob and label": ({"agents": ["deploy-*"], "labels": {"team": "infra"}}, "yes no  no  no"),
    "agentless requests only": ({"agentless": True}, "no  no  no  yes"),
    "every request with an agent": ({"agentless": False}, "yes yes yes no"),
    "glob plus agentless": ({"agents": ["build-?"], "agentless": True}, "no  no  yes yes"),
    "label, agentless refused": ({"labels": {"team": "web"}, "agentless": False}, "no  no  yes no"),
}


@pytest.mark.parametrize(
    ("route", "agent", "expected"),
    [
        pytest.param(route, agent, answer == "yes", id=f"{route}-{agent}")
        for route, (_, row) in ROUTES.items()
        for agent, answer in zip(AGENTS, row.split(), strict=True)
    ],
)
def test_subscription_matches(route: str, agent: str, expected: bool) -> None:
    subscription = Subscription.model_validate(ROUTES[route][0])
    assert subscription.matches(*AGENTS[agent]) is expected


@pytest.mark.parametrize(
    ("fields", "phrase"),
    [
        ({}, "every request"),
        ({"agentless": True}, "agentless requests only"),
        ({"agentless": False}, "every request with an agent"),
        ({"agents": ["deploy-*"], "labels": {"team": "infra"}}, "agents deploy-* with labels team=infra"),
        ({"labels": {"team": "infra"}}, "agents with labels team=infra"),
        ({"agents": ["build-?"], "agentless": True}, "agents build-? and agentless requests"),
    ],
)
def test_subscription_describes_itself(fields: dict[str, object], phrase: str) -> None:
    assert Subscription.model_validate(fields).describe() == phrase


def test_os_environ_is_the_default_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(os.environ, "HANDRAISE_TEST_TOKEN", "t")
    text = '[server]\nlisten = "0.0.0.0:1"\napi_token_env = "HANDRAISE_TEST_TOKEN"\n'
    assert parse_config(text).server.api_token_env == "HANDRAISE_TEST_TOKEN"


def test_imap_starttls_is_refused_when_the_config_is_loaded() -> None:
    text = (
        '[email]\naddress = "bot@example.org"\n[email.smtp]\nhost = "smtp.example.org"\n'
        '[email.imap]\nhost = "imap.example.org"\nusername = "bot"\npassword_env = "P"\nsecurity = "starttls"\n'
        '[[email.subscriptions]]\nto = ["a@example.org"]\n'
    )
    with pytest.raises(ConfigError) as error:
        parse_config(text, path="config.toml", environ={"P": "x", "HANDRAISE_EMAIL_SECRET": "s" * 32})
    assert str(error.value) == ('config.toml:9: email.imap.security: "starttls" is not allowed; use "tls" or "none"')


@pytest.mark.parametrize("url", ["https://handraise.example.org", "http://[2001:db8::1]:8080/", "https://h.example/x"])
def test_public_url_takes_an_http_url(url: str) -> None:
    assert parse_config(f'[server]\npublic_url = "{url}"\n', environ={}).server.public_url == url


@pytest.mark.parametrize("url", ["handraise.example.org", "ftp://h.example", "https://", "https://user@h.example"])
def test_public_url_that_is_not_a_url_says_how_to_write_one(url: str) -> None:
    assert str(error_for(f'[server]\npublic_url = "{url}"\n')) == (
        f'config.toml:2: server.public_url: "{url}" is not an http(s) URL; write e.g. "https://handraise.example.org"'
    )


def test_max_waiting_must_be_positive() -> None:
    assert parse_config("", environ={}).server.max_waiting == 10_000
    assert str(error_for("[server]\nmax_waiting = 0\n")).startswith("config.toml:2: server.max_waiting: ")


def test_inbox_approvals_without_responders_are_refused_naming_the_key() -> None:
    error = error_for("[[web.subscriptions]]\napprovals = 2\n")
    assert (error.line, error.key) == (2, "web.subscriptions[0].approvals")
    assert "responders" in str(error)


@pytest.mark.parametrize(
    "text",
    [
        '[[web.subscriptions]]\napprovals = 2\nresponders = ["alice", "bob"]\n',
        '[web]\nresponders = ["alice", "bob"]\n[[web.subscriptions]]\napprovals = 2\n',
    ],
    ids=["on the subscription", "in [web]"],
)
def test_inbox_approvals_with_responders_load(text: str) -> None:
    config = parse_config(text, path="config.toml", environ={})
    assert config.web.subscriptions[0].approvals == 2


def test_remind_max_without_remind_every_is_refused_rather_than_ignored() -> None:
    err = error_for("[[web.subscriptions]]\nremind_max = 2\n")
    assert str(err) == (
        "config.toml:2: web.subscriptions[0].remind_max: has no effect without remind_every; "
        'add remind_every = "15m" (how often), or remove remind_max'
    )


def test_approvals_written_as_a_string_is_refused() -> None:
    err = error_for('[[web.subscriptions]]\nresponders = ["alice"]\napprovals = "2"\n')
    assert str(err).startswith("config.toml:3: web.subscriptions[0].approvals: ")


def test_store_url_env_names_the_variable_and_keeps_the_sqlite_path() -> None:
    text = '[store]\npath = "/var/lib/handraise.db"\nurl_env = "HANDRAISE_DATABASE_URL"\n'
    config = parse_config(text, environ={"HANDRAISE_DATABASE_URL": "postgresql://h/db"})
    assert (config.store.url_env, config.store.path) == ("HANDRAISE_DATABASE_URL", "/var/lib/handraise.db")


def test_store_url_env_must_be_set_when_the_environment_is_checked() -> None:
    with pytest.raises(ConfigError, match="HANDRAISE_DATABASE_URL is not set") as raised:
        parse_config('[store]\nurl_env = "HANDRAISE_DATABASE_URL"\n', environ={})
    assert raised.value.key == "store.url_env"


def test_a_url_written_into_url_env_is_refused_as_not_a_variable_name() -> None:
    with pytest.raises(ConfigError, match="not an environment variable name") as raised:
        parse_config('[store]\nurl_env = "postgresql://u:pw@h/db"\n', environ={})
    assert raised.value.key == "store.url_env"
