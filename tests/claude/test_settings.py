"""`handraise claude-hook install|uninstall` on Claude Code's settings file, which holds the person's other hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

OTHER_HOOKS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-commands.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER_HOOKS, indent=2))
    return path


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        hook
        for group in settings["hooks"].get(event, [])
        for hook in group["hooks"]
        if hook["command"].startswith("handraise claude-hook")
    ]


def test_install_adds_both_hooks_with_a_timeout_keeping_the_others(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claude-hook", "install", "--settings", str(settings), "--label", "team=billing"]) == 0
    installed = read(settings)
    assert installed["model"] == "opus" and installed["permissions"] == OTHER_HOOKS["permissions"]
    assert installed["hooks"]["PreToolUse"][0] == OTHER_HOOKS["hooks"]["PreToolUse"][0]
    assert installed["hooks"]["Stop"] == OTHER_HOOKS["hooks"]["Stop"]
    asking = {"type": "command", "command": "handraise claude-hook --label team=billing", "timeout": 3600}
    assert installed["hooks"]["PreToolUse"][1] == {"matcher": "AskUserQuestion", "hooks": [asking]}
    assert installed["hooks"]["PermissionRequest"] == [{"matcher": "*", "hooks": [asking]}]
    out = capsys.readouterr().out
    assert "added PreToolUse [AskUserQuestion]" in out and "added PermissionRequest [*]" in out


def test_installing_twice_changes_nothing(settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["claude-hook", "install", "--settings", str(settings)])
    first = settings.read_text()
    capsys.readouterr()
    assert main(["claude-hook", "install", "--settings", str(settings)]) == 0
    assert settings.read_text() == first
    assert "no change" in capsys.readouterr().out


def test_installing_with_other_flags_replaces_the_command(settings: Path) -> None:
    main(["claude-hook", "install", "--settings", str(settings)])
    main(["claude-hook", "install", "--settings", str(settings), "--server", "http://bot.internal:8765"])
    (hook,) = ours(read(settings), "PreToolUse")
    assert hook["command"] == "handraise claude-hook --server http://bot.internal:8765"


def test_no_permissions_installs_only_the_question_hook(settings: Path) -> None:
    main(["claude-hook", "install", "--settings", str(settings), "--no-permissions"])
    assert "PermissionRequest" not in read(settings)["hooks"]


def test_uninstall_restores_the_file_as_it_was(settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["claude-hook", "install", "--settings", str(settings)])
    assert main(["claude-hook", "uninstall", "--settings", str(settings)]) == 0
    assert read(settings) == OTHER_HOOKS
    assert "removed PermissionRequest [*]" in capsys.readouterr().out


def test_install_creates_the_project_settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["claude-hook", "install", "--project"]) == 0
    assert ours(read(tmp_path / ".claude" / "settings.json"), "PermissionRequest")


def test_user_scope_writes_the_home_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["claude-hook", "install", "--user"]) == 0
    assert ours(read(tmp_path / ".claude" / "settings.json"), "PreToolUse")


@pytest.mark.parametrize("text", ['{"hooks": ', "[1, 2]", '{"hooks": []}', '{"hooks": {"PreToolUse": {}}}'], ids=str)
def test_a_settings_file_it_cannot_edit_is_left_untouched_with_exit_2(
    settings: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    settings.write_text(text)
    assert main(["claude-hook", "install", "--settings", str(settings)]) == 2
    assert settings.read_text() == text
    assert capsys.readouterr().err.startswith("handraise: ")


def test_a_label_the_hook_could_not_read_is_refused_at_install(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = settings.read_text()
    assert main(["claude-hook", "install", "--settings", str(settings), "--label", "team"]) == 2
    assert settings.read_text() == before
    assert capsys.readouterr().err == "handraise: --label 'team': write it as key=value\n"


@pytest.mark.parametrize("server", ["127.0.0.1:8765", "http://x y", "ftp://h.example"])
def test_a_server_that_is_not_an_http_url_is_refused_at_install(settings: Path, server: str) -> None:
    before = settings.read_text()
    assert main(["claude-hook", "install", "--settings", str(settings), "--server", server]) == 2
    assert settings.read_text() == before


def test_an_http_server_url_is_written_into_the_command(settings: Path) -> None:
    assert main(["claude-hook", "install", "--settings", str(settings), "--server", "http://10.0.0.5:8765"]) == 0
    assert ours(read(settings), "PreToolUse")[0]["command"] == "handraise claude-hook --server http://10.0.0.5:8765"
