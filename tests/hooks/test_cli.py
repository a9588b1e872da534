"""`handraise hook …` on the command line: the agents, their flags, the alias `claude-hook`, the install parsers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.cli import DEFAULT_SERVER, HOOK_WAIT_DEFAULT, build_parser, main
from bot.hooks.install import AGENT_TIMEOUT_SECONDS as HOOK_TIMEOUT_SECONDS
from bot.hooks.runner import DEFAULT_WAIT_SECONDS
from bot.settings.duration_text import format_duration

from .rig import AGENTS


def test_the_default_wait_in_help_is_the_runners() -> None:
    assert HOOK_WAIT_DEFAULT == format_duration(timedelta(seconds=DEFAULT_WAIT_SECONDS)) == "59m40s"


def test_claude_codes_entry_outlasts_the_hooks_wait() -> None:
    assert HOOK_TIMEOUT_SECONDS > DEFAULT_WAIT_SECONDS


@pytest.mark.parametrize("agent", AGENTS)
def test_help_prints_the_default_timeout(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["hook", agent, "--help"])
    assert "(default: 59m40s)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_runs_its_own_module_with_the_shared_flags(agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANDRAISE_SERVER", raising=False)
    args = build_parser().parse_args(["hook", agent, "--label", "a=1", "--label", "b=2", "--on-timeout", "deny"])
    assert (args.run, args.agent, args.label, args.on_timeout) == (
        f"bot.hooks.{agent}:run",
        agent,
        ["a=1", "b=2"],
        "deny",
    )
    assert (args.server, args.timeout) == (DEFAULT_SERVER, None)


def test_the_server_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAISE_SERVER", "http://bot.internal:8765")
    assert build_parser().parse_args(["hook", "gemini"]).server == "http://bot.internal:8765"


def test_on_timeout_takes_only_fallback_or_deny(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["hook", "codex", "--on-timeout", "allow"])
    assert "invalid choice" in capsys.readouterr().err


def test_claude_hook_is_an_alias_of_hook_claude() -> None:
    alias = build_parser().parse_args(["claude-hook", "--timeout", "5m", "--on-timeout", "deny"])
    hook = build_parser().parse_args(["hook", "claude", "--timeout", "5m", "--on-timeout", "deny"])
    assert (alias.run, alias.timeout, alias.on_timeout) == (hook.run, hook.timeout, hook.on_timeout)
    assert build_parser().parse_args(["claude-hook", "install"]).run == "bot.hooks.claude_settings:run_settings"


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_install_and_uninstall_take_the_agent_and_the_scope(action: str) -> None:
    args = build_parser().parse_args(["hook", action, "--for", "cursor", "--project"])
    assert (args.run, args.agent, args.project) == (f"bot.hooks.install:run_{action}", "cursor", True)
    assert build_parser().parse_args(["hook", action, "--for", "codex"]).project is False


def test_install_takes_the_server_and_labels() -> None:
    args = build_parser().parse_args(
        ["hook", "install", "--for", "gemini", "--server", "http://h:1", "--label", "a=1", "--label", "b=2"]
    )
    assert (args.server, args.label) == ("http://h:1", ["a=1", "b=2"])
    assert build_parser().parse_args(["hook", "install", "--for", "gemini"]).server is None


@pytest.mark.parametrize("argv", [["hook", "install"], ["hook", "install", "--for", "vim"], ["hook"]])
def test_install_needs_a_known_agent(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
