"""`handraise hook install|uninstall --for AGENT` on each agent's own hooks file, which holds the person's other hooks
and settings: they stay as they were, byte for byte, whatever the file's layout."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from bot.cli import build_parser, main
from bot.hooks.install import AGENT_FILES, AGENT_TIMEOUT_SECONDS, GEMINI_TOOLS, run_install, run_uninstall

AGENTS = tuple(AGENT_FILES)
FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
}


def handler(agent: str, command: str) -> dict[str, Any]:
    if agent == "gemini":
        return {"name": "handraise", "type": "command", "command": command, "timeout": 3_600_000}
    if agent == "cursor":
        return {"command": command, "timeout": 3600}
    return {"type": "command", "command": command, "timeout": 3600}


def fresh_file(agent: str, command: str) -> dict[str, Any]:
    """What install writes into a file that did not exist, from each agent's hooks reference."""
    ours = handler(agent, command)
    if agent == "claude":
        return {
            "hooks": {
                "PreToolUse": [{"matcher": "AskUserQuestion", "hooks": [ours]}],
                "PermissionRequest": [{"matcher": "*", "hooks": [ours]}],
            }
        }
    if agent == "codex":
        return {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [ours]}]}}
    if agent == "gemini":
        return {"hooks": {"BeforeTool": [{"matcher": GEMINI_TOOLS, "hooks": [ours]}]}}
    return {"version": 1, "hooks": {"beforeShellExecution": [ours], "beforeMCPExecution": [ours]}}


OTHERS: dict[str, dict[str, Any]] = {
    "claude": {
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-commands.sh"}]},
                {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": "./log-question.sh"}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
        "env": {"NAME": "Zoë"},
    },
    "codex": {
        "hooks": {
            "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}],
        }
    },
    "gemini": {
        "general": {"vimMode": True},
        "hooksConfig": {"enabled": True},
        "hooks": {
            "disabled": ["old-hook"],
            "BeforeTool": [{"matcher": "write_file", "hooks": [{"name": "lint", "type": "command", "command": "./l"}]}],
            "AfterTool": [{"matcher": "*", "hooks": [{"name": "log", "type": "command", "command": "./log.sh"}]}],
        },
    },
    "cursor": {
        "version": 1,
        "hooks": {
            "beforeShellExecution": [{"command": "./guard.sh"}],
            "afterFileEdit": [{"command": "./format.sh", "timeout": 10}],
        },
    },
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.chdir(project)
    return home


def user_file(home: Path, agent: str) -> Path:
    return home / FILES[agent]


def args(agent: str, *, project: bool = False, server: str | None = None, label: list[str] | None = None) -> Any:
    return argparse.Namespace(agent=agent, project=project, server=server, label=label or [])


def write(path: Path, data: object, text: str | None = None) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n" if text is None else text
    path.write_bytes(text.encode())
    return text


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def ours(settings: dict[str, Any]) -> list[str]:
    """Every handraise command in the file, wherever it stands."""
    found: list[str] = []
    for entries in settings.get("hooks", {}).values():
        for entry in entries if isinstance(entries, list) else []:
            for hook in entry.get("hooks", [entry]) if isinstance(entry, dict) else []:
                if hook.get("command", "").startswith("handraise "):
                    found.append(hook["command"])
    return found


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with handraise's handlers taken out, and the groups and events that held only them."""
    kept: dict[str, Any] = {}
    for event, entries in settings["hooks"].items():
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            kept[event] = entries
            continue
        groups = []
        for entry in entries:
            handlers = [h for h in entry.get("hooks", [entry]) if not h["command"].startswith("handraise ")]
            if handlers:
                groups.append({**entry, "hooks": handlers} if "hooks" in entry else handlers[0])
        if groups:
            kept[event] = groups
    return {**settings, "hooks": kept}


# -- a fresh file, and a file that holds other hooks -------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_install_writes_the_agents_documented_entry_into_a_new_user_file(
    home: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_install(args(agent)) == 0
    assert read(user_file(home, agent)) == fresh_file(agent, f"handraise hook {agent}")
    out = capsys.readouterr().out
    assert out.startswith(f"Added handraise to ~/{FILES[agent]} (")
    assert out.rstrip().endswith(f"running: handraise hook {agent}")


def test_the_message_names_the_file_and_the_event(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_install(args("codex"))
    assert capsys.readouterr().out.startswith("Added handraise to ~/.codex/hooks.json (PermissionRequest)")


@pytest.mark.parametrize("agent", AGENTS)
def test_install_keeps_every_other_hook_and_setting_in_their_order(home: Path, agent: str) -> None:
    path = user_file(home, agent)
    write(path, OTHERS[agent])
    assert run_install(args(agent)) == 0
    installed = read(path)
    assert len(ours(installed)) == len(AGENT_FILES[agent].slots)
    assert without_ours(installed) == OTHERS[agent]
    assert list(installed) == list(OTHERS[agent])
    assert list(installed["hooks"])[: len(OTHERS[agent]["hooks"])] == list(OTHERS[agent]["hooks"])


def test_claude_joins_the_persons_own_ask_user_question_group(home: Path) -> None:
    path = user_file(home, "claude")
    write(path, OTHERS["claude"])
    run_install(args("claude"))
    group = read(path)["hooks"]["PreToolUse"][1]
    assert group["matcher"] == "AskUserQuestion"
    assert [hook["command"] for hook in group["hooks"]] == ["./log-question.sh", "handraise hook claude"]


def test_cursor_gets_version_1_first_in_a_file_that_lacked_it(home: Path) -> None:
    path = user_file(home, "cursor")
    write(path, {"hooks": {"stop": [{"command": "./bye.sh"}]}})
    run_install(args("cursor"))
    installed = read(path)
    assert list(installed) == ["version", "hooks"] and installed["version"] == 1
    assert installed["hooks"]["stop"] == [{"command": "./bye.sh"}]


# -- twice, other flags, uninstall -------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_installing_twice_changes_nothing(home: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = user_file(home, agent)
    write(path, OTHERS[agent])
    run_install(args(agent, label=["team=billing"]))
    first = path.read_bytes()
    capsys.readouterr()
    assert run_install(args(agent, label=["team=billing"])) == 0
    assert path.read_bytes() == first
    assert "no change" in capsys.readouterr().out


@pytest.mark.parametrize("agent", AGENTS)
def test_installing_with_other_flags_replaces_handraises_entry(home: Path, agent: str) -> None:
    path = user_file(home, agent)
    write(path, OTHERS[agent])
    run_install(args(agent, label=["team=billing"]))
    assert run_install(args(agent, server="http://bot.internal:8765")) == 0
    wanted = f"handraise hook {agent} --server http://bot.internal:8765"
    assert ours(read(path)) == [wanted] * len(AGENT_FILES[agent].slots)


LAYOUTS = {
    "indent 2": lambda data: json.dumps(data, indent=2, ensure_ascii=False) + "\n",
    "indent 4, no final newline": lambda data: json.dumps(data, indent=4, ensure_ascii=False),
    "tabs": lambda data: json.dumps(data, indent="\t", ensure_ascii=False) + "\n",
    "one line": lambda data: json.dumps(data, ensure_ascii=False) + "\n",
    "compact": lambda data: json.dumps(data, separators=(",", ":")),
    "ascii escapes": lambda data: json.dumps(data, indent=2) + "\n",
    "CRLF": lambda data: json.dumps(data, indent=2, ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
    "byte-order mark": lambda data: "\ufeff" + json.dumps(data, indent=2, ensure_ascii=False) + "\n",
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("agent", AGENTS)
def test_uninstall_gives_back_the_file_byte_for_byte(home: Path, agent: str, layout: str) -> None:
    path = user_file(home, agent)
    before = write(path, OTHERS[agent], LAYOUTS[layout](OTHERS[agent])).encode()
    run_install(args(agent, label=["team=billing"]))
    assert path.read_bytes() != before
    assert run_uninstall(args(agent)) == 0
    assert path.read_bytes() == before


def test_install_writes_in_the_files_own_layout(home: Path) -> None:
    path = user_file(home, "codex")
    write(path, OTHERS["codex"], json.dumps(OTHERS["codex"], indent=4))
    run_install(args("codex"))
    text = path.read_text()
    assert text.startswith('{\n    "hooks": {\n        "PermissionRequest"') and not text.endswith("\n")


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("project", [False, True], ids=["user", "project"])
def test_uninstall_deletes_a_file_that_install_created(home: Path, agent: str, project: bool) -> None:
    path = (Path.cwd() if project else home) / FILES[agent]
    run_install(args(agent, project=project))
    assert path.exists()
    assert run_uninstall(args(agent, project=project)) == 0
    assert not path.exists() and not path.parent.exists()


def test_uninstall_takes_out_only_the_lists_it_emptied(home: Path) -> None:
    path = user_file(home, "codex")
    write(path, {"hooks": {"Stop": [], "PermissionRequest": []}})
    run_install(args("codex"))
    run_uninstall(args("codex"))
    # Like any list handraise empties, the PermissionRequest list goes; the person's other empty list stays.
    assert read(path) == {"hooks": {"Stop": []}}


def test_uninstall_without_our_entries_changes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = user_file(home, "gemini")
    before = write(path, OTHERS["gemini"])
    assert run_uninstall(args("gemini")) == 0
    assert path.read_text() == before
    assert "no handraise hooks; no change" in capsys.readouterr().out
    assert run_uninstall(args("codex")) == 0 and not user_file(home, "codex").exists()


def test_uninstall_removes_entries_another_spelling_wrote(home: Path) -> None:
    path = user_file(home, "claude")
    write(path, OTHERS["claude"])
    main(["claude-hook", "install", "--user"])
    run_uninstall(args("claude"))
    assert read(path) == OTHERS["claude"]


def test_hook_install_replaces_what_claude_hook_install_wrote(home: Path) -> None:
    main(["claude-hook", "install", "--user", "--label", "team=a"])
    run_install(args("claude"))
    assert ours(read(user_file(home, "claude"))) == ["handraise hook claude", "handraise hook claude"]


@pytest.mark.parametrize(
    "command",
    ["/usr/local/bin/handraise hook codex", "~/.local/bin/handraise hook codex --label x=y", "handraise claude-hook"],
)
def test_handraise_by_any_path_or_older_spelling_is_recognised(home: Path, command: str) -> None:
    path = user_file(home, "codex")
    write(
        path, {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}}
    )
    run_install(args("codex"))
    assert ours(read(path)) == ["handraise hook codex"]
    run_uninstall(args("codex"))
    assert not path.exists()


@pytest.mark.parametrize(
    "command", ["handraise-notify hook codex", "echo handraise hook codex", "handraise ask 'ok?'", "handraise hook"]
)
def test_other_commands_that_mention_handraise_are_not_ours(home: Path, command: str) -> None:
    path = user_file(home, "codex")
    theirs = {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}}
    write(path, theirs)
    run_install(args("codex"))
    assert read(path)["hooks"]["PermissionRequest"][0]["hooks"][0]["command"] == command
    run_uninstall(args("codex"))
    assert read(path) == theirs


# -- scope -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_project_scope_writes_the_file_under_the_current_folder(home: Path, agent: str) -> None:
    assert run_install(args(agent, project=True)) == 0
    assert ours(read(Path.cwd() / FILES[agent]))
    assert not user_file(home, agent).exists()


@pytest.mark.parametrize("agent", AGENTS)
def test_user_scope_leaves_the_project_alone(home: Path, agent: str) -> None:
    run_install(args(agent))
    assert not (Path.cwd() / FILES[agent].split("/")[0]).exists()


def test_codex_home_moves_the_user_file(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    run_install(args("codex"))
    assert ours(read(tmp_path / "codex-home" / "hooks.json")) and not user_file(home, "codex").exists()


def test_the_cli_dispatches_install_and_uninstall(home: Path) -> None:
    assert main(["hook", "install", "--for", "gemini", "--project", "--label", "team=web"]) == 0
    assert ours(read(Path.cwd() / ".gemini/settings.json")) == ["handraise hook gemini --label team=web"]
    assert main(["hook", "uninstall", "--for", "gemini", "--project"]) == 0
    assert not (Path.cwd() / ".gemini").exists()


# -- the command written -----------------------------------------------------------------------------------------------


HOSTILE_LABELS = ["team=a b", 'who=it\'s "x"', "cmd=$(rm -rf ~); `id`", "tab=\ta", "flag=--server"]


@pytest.mark.parametrize("agent", AGENTS)
def test_labels_and_server_survive_the_agents_shell_word_for_word(home: Path, agent: str) -> None:
    run_install(args(agent, server="https://bot.example:8765/", label=HOSTILE_LABELS))
    (command, *_) = ours(read(user_file(home, agent)))
    words = ["handraise", "hook", agent, "--server", "https://bot.example:8765/"]
    for label in HOSTILE_LABELS:
        words += ["--label", label]
    assert shlex.split(command) == words


def test_a_label_that_starts_with_a_dash_is_glued_to_its_flag(home: Path) -> None:
    run_install(args("codex", label=["-x=1", "--y=2"]))
    (command,) = ours(read(user_file(home, "codex")))
    assert shlex.split(command)[3:] == ["--label=-x=1", "--label=--y=2"]


def _hook_runner_parser_is_there() -> bool:
    try:
        build_parser().parse_args(["hook", "codex"])
    except SystemExit:
        return False
    return True


@pytest.mark.parametrize("agent", AGENTS)
def test_the_written_command_is_one_the_cli_accepts(home: Path, agent: str) -> None:
    run_install(args(agent, server="http://127.0.0.1:8765", label=[*HOSTILE_LABELS, "-lead=x"]))
    (command, *_) = ours(read(user_file(home, agent)))
    if not _hook_runner_parser_is_there():
        pytest.skip("`handraise hook AGENT` is not in this CLI yet")
    parsed = build_parser().parse_args(shlex.split(command)[1:])
    assert parsed.server == "http://127.0.0.1:8765" and parsed.label == [*HOSTILE_LABELS, "-lead=x"]


def test_the_agents_timeout_outlasts_the_hooks_default_wait() -> None:
    # The hook waits 59m40s by default; the agent must not kill it first and leave the question open.
    assert AGENT_TIMEOUT_SECONDS > 59 * 60 + 40
    assert handler("gemini", "x")["timeout"] == AGENT_TIMEOUT_SECONDS * 1000


@pytest.mark.parametrize("label", ["team", "=x", ""])
def test_a_label_the_hook_could_not_read_is_refused(home: Path, label: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_install(args("codex", label=[label])) == 2
    assert not user_file(home, "codex").exists()
    assert "key=value" in capsys.readouterr().err


@pytest.mark.parametrize("server", ["127.0.0.1:8765", "http://x y", "ftp://h.example", "http://[::1", "http://"])
def test_a_server_that_is_not_an_http_url_is_refused(home: Path, server: str) -> None:
    assert run_install(args("cursor", server=server)) == 2
    assert not user_file(home, "cursor").exists()


# -- files it must not touch -------------------------------------------------------------------------------------------


UNEDITABLE = {
    "not JSON": '{"hooks": ',
    "JSON with comments": '{\n  // mine\n  "hooks": {}\n}\n',
    "an array": "[1, 2]",
    "a string": '"hooks"',
    "hooks a list": '{"hooks": []}',
    "hooks a string": '{"hooks": "none"}',
    "nested too deep": "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("text", UNEDITABLE.values(), ids=UNEDITABLE.keys())
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("action", [run_install, run_uninstall], ids=["install", "uninstall"])
def test_a_file_it_cannot_edit_is_left_untouched_with_exit_2(
    home: Path, agent: str, text: str, action: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = user_file(home, agent)
    write(path, None, text)
    # Uninstall finds nothing of handraise's under a `hooks` that is not an object, so it has nothing to change.
    expected = (
        0 if action is run_uninstall and text in (UNEDITABLE["hooks a list"], UNEDITABLE["hooks a string"]) else 2
    )
    assert action(args(agent)) == expected
    assert path.read_text() == text
    if expected == 2:
        error = capsys.readouterr().err
        assert error.startswith("handraise: ") and f"~/{FILES[agent]}" in error and error[-1] == "\n"


@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("claude", "PermissionRequest"),
        ("codex", "PermissionRequest"),
        ("gemini", "BeforeTool"),
        ("cursor", "beforeMCPExecution"),
    ],
)
def test_an_event_of_ours_that_is_not_a_list_is_refused(
    home: Path, agent: str, event: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = user_file(home, agent)
    before = write(path, {"hooks": {event: {"command": "x"}}})
    assert run_install(args(agent)) == 2
    assert path.read_text() == before
    assert f"hooks.{event}` is not a list" in capsys.readouterr().err


def test_a_cursor_file_of_another_version_is_refused(home: Path) -> None:
    path = user_file(home, "cursor")
    before = write(path, {"version": 2, "hooks": {}})
    assert run_install(args("cursor")) == 2
    assert path.read_text() == before


@pytest.mark.parametrize("agent", AGENTS)
def test_a_read_only_file_is_refused_and_left_as_it_was(
    home: Path, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = user_file(home, agent)
    before = write(path, OTHERS[agent])
    path.chmod(0o444)
    assert run_install(args(agent)) == 2
    assert path.read_text() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "is read-only" in capsys.readouterr().err


def test_uninstall_refuses_a_read_only_file_too(home: Path) -> None:
    path = user_file(home, "codex")
    run_install(args("codex"))
    before = path.read_text()
    path.chmod(0o400)
    assert run_uninstall(args("codex")) == 2
    assert path.read_text() == before


@pytest.mark.parametrize(
    ("name", "content"),
    [("not UTF-8", b'{"a": "\xff"}'), ("oversize", b" " * (8 * 1024 * 1024 + 1) + b"{}"), ("NUL bytes", b"\0\0")],
)
def test_hostile_bytes_are_refused(home: Path, name: str, content: bytes) -> None:
    path = user_file(home, "codex")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert run_install(args("codex")) == 2
    assert path.read_bytes() == content


def test_a_folder_where_the_file_should_be_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user_file(home, "codex").mkdir(parents=True)
    assert run_install(args("codex")) == 2
    assert "is a folder" in capsys.readouterr().err


def test_the_files_mode_is_kept(home: Path) -> None:
    path = user_file(home, "claude")
    write(path, OTHERS["claude"])
    path.chmod(0o600)
    run_install(args("claude"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_new_file_gets_the_usual_mode(home: Path) -> None:
    umask = os.umask(0o022)
    try:
        run_install(args("codex"))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(user_file(home, "codex").stat().st_mode) == 0o644


def test_a_symlinked_file_stays_a_link_and_its_target_is_edited(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "claude-settings.json"
    before = write(target, OTHERS["claude"])
    link = user_file(home, "claude")
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    run_install(args("claude"))
    assert link.is_symlink() and ours(read(target))
    run_uninstall(args("claude"))
    assert link.is_symlink() and target.read_text() == before


def test_nothing_is_left_beside_the_file(home: Path) -> None:
    path = user_file(home, "codex")
    write(path, OTHERS["codex"])
    run_install(args("codex"))
    assert sorted(p.name for p in path.parent.iterdir()) == ["hooks.json"]


# -- what the person is told -------------------------------------------------------------------------------------------


def test_codex_says_the_hook_must_be_trusted(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_install(args("codex", project=True))
    notes = capsys.readouterr().err
    assert "/hooks" in notes and "trust" in notes and "trust the project" in notes


@pytest.mark.parametrize("agent", ["claude", "gemini", "cursor"])
def test_the_other_agents_say_to_restart(home: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    run_install(args(agent))
    assert "restart" in capsys.readouterr().err.lower()


def test_nothing_to_say_when_nothing_changed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_install(args("cursor"))
    capsys.readouterr()
    run_install(args("cursor"))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("agent", "settings", "warning"),
    [
        ("claude", {"disableAllHooks": True}, "disableAllHooks"),
        ("gemini", {"hooksConfig": {"enabled": False}}, "hooksConfig.enabled"),
        ("gemini", {"hooks": {"disabled": ["handraise"]}}, "hooks.disabled"),
    ],
)
def test_a_setting_that_switches_hooks_off_is_pointed_out(
    home: Path, agent: str, settings: dict[str, Any], warning: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(user_file(home, agent), settings)
    assert run_install(args(agent)) == 0
    assert warning in capsys.readouterr().err


@pytest.mark.parametrize("feature", ["hooks", "codex_hooks"])
def test_codex_hooks_switched_off_in_config_toml_is_pointed_out(
    home: Path, feature: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(f"[features]\n{feature} = false\n")
    run_install(args("codex"))
    assert "turns hooks off" in capsys.readouterr().err


def test_a_broken_config_toml_is_no_reason_to_fail(home: Path) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text("[features\n")
    assert run_install(args("codex")) == 0


def test_a_hand_formatted_file_keeps_its_content_and_indentation(home: Path) -> None:
    path = user_file(home, "codex")
    text = '{ "hooks" : {\n      "Stop": [ {"hooks": [{"type": "command", "command": "say done"}]} ] },\n  "x": 1 }'
    write(path, None, text)
    run_install(args("codex"))
    assert '\n      "hooks": {' in path.read_text()
    run_uninstall(args("codex"))
    assert read(path) == json.loads(text)


@pytest.mark.parametrize(
    "event", ["before_tool_shell", "before_tool_write_file", "before_tool_replace", "before_tool_mcp"]
)
def test_the_gemini_matcher_covers_every_tool_the_hook_answers(event: str) -> None:
    # Gemini CLI tests the matcher as a regex on the tool name; a tool it misses never reaches the hook.
    fixture = Path(__file__).parent / "fixtures" / "gemini" / f"{event}.json"
    tool = json.loads(fixture.read_text())["tool_name"]
    assert re.search(GEMINI_TOOLS, tool), tool


@pytest.mark.parametrize("tool", ["mcp_github_create_issue", "mcp__github__create_issue", "web_fetch"])
def test_the_gemini_matcher_covers_mcp_tools_by_either_spelling(tool: str) -> None:
    assert re.search(GEMINI_TOOLS, tool)


@pytest.mark.parametrize("tool", ["read_file", "glob", "list_directory", "run_shell_command_x", "save_memory"])
def test_the_gemini_matcher_leaves_tools_that_do_not_ask_alone(tool: str) -> None:
    assert not re.search(GEMINI_TOOLS, tool)
