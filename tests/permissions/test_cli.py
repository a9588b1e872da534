"""`handraise rules` and the rule lines of `handraise history`, as people and shell scripts see them, including a
removal that a running server honours at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.cli import main
from bot.permissions.prompt import ALWAYS, PERMISSION_ID, Permission
from bot.permissions.rules import learned_rule
from bot.store.sqlite.store import Store
from core import AskUserQuestionAnswerItem
from tests.bot.program_rig import config_for, program

pytestmark = pytest.mark.anyio

RULES = """
[[rules]]
id = "git-read"
tool = "shell"
match = "git status*"
decision = "allow"

[[rules]]
tool = "mcp__github__*"
match = "*"
decision = "deny"
agents = ["sess-*"]
"""


def npm(command: str = "npm test") -> Permission:
    return Permission(agent="codex", project="shop", tool="Bash", kind="shell", request=command, detail=command)


def config_file(tmp_path: Path, rules: str = RULES) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{tmp_path / "handraise.db"}"\n{rules}')
    return path


async def run_cli(*argv: str) -> int:
    return await anyio.to_thread.run_sync(main, list(argv))  # a thread: the command runs its own event loop


def test_rules_json_is_one_list_of_the_config_rules_then_the_learned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path)
    with Store.open(tmp_path / "handraise.db") as store:
        store.learn_rule(learned_rule(npm(), by="alice"))
    assert main(["rules", "--config", str(path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(rule["id"], rule["source"], rule["decision"]) for rule in listed] == [
        ("git-read", "config", "allow"),
        ("config-2", "config", "deny"),
        (learned_rule(npm()).id, "learned", "allow"),
    ]
    assert listed[1] == {
        "id": "config-2",
        "tool": "mcp__github__*",
        "match": "*",
        "decision": "deny",
        "source": "config",
        "agents": ["sess-*"],
    }
    assert (listed[2]["tool"], listed[2]["match"], listed[2]["agent"], listed[2]["project"]) == (
        "Bash",
        "npm test",
        "codex",
        "shop",
    )
    assert listed[2]["learned_at"]


def test_rules_for_people_say_where_each_rule_comes_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path)
    with Store.open(tmp_path / "handraise.db") as store:
        store.learn_rule(learned_rule(npm("make\nall")))
    assert main(["rules", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[0].split() == ["git-read", "config", "allow", "shell", '"git', 'status*"']
    assert "(agents sess-*)" in lines[1]
    assert lines[2].startswith("learned-") and '"make\\nall"' in lines[2] and "for codex in shop, learned " in lines[2]


def test_no_rules_say_how_to_get_some(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--config", str(config_file(tmp_path, ""))]) == 0
    assert "Always allow" in capsys.readouterr().out
    assert main(["rules", "--config", str(config_file(tmp_path, "")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize("config_first", [True, False])
def test_remove_forgets_a_learned_rule_with_config_before_or_after_the_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config_first: bool
) -> None:
    path = config_file(tmp_path)
    rule = learned_rule(npm())
    with Store.open(tmp_path / "handraise.db") as store:
        store.learn_rule(rule)
    config = ["--config", str(path)]
    argv = ["rules", *config, "remove", rule.id] if config_first else ["rules", "remove", rule.id, *config]
    assert main(argv) == 0
    assert rule.id in capsys.readouterr().out
    with Store.open(tmp_path / "handraise.db") as store:
        assert store.learned_rules() == []
    assert main(argv) == 1
    assert capsys.readouterr().err == f"handraise: no learned rule {rule.id}; `handraise rules` lists them\n"


@pytest.mark.parametrize("rule_id", ["git-read", "config-2"])
def test_remove_refuses_a_config_rule_and_says_where_it_lives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rule_id: str
) -> None:
    path = config_file(tmp_path)
    assert main(["rules", "remove", rule_id, "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"handraise: rule {rule_id} is in the config file ({path}); remove its [[rules]] table")
    assert err.count("\n") == 1


def test_a_bad_rule_in_the_config_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path, '[[rules]]\nid = "x"\ntool = "shell"\nmatch = "ls"\ndecision = "perhaps"\n')
    assert main(["rules", "--config", str(path)]) == 2
    assert 'rules[0].decision: "perhaps" is not allowed; use "allow" or "deny" (rule "x")' in capsys.readouterr().err


async def post(url: str, payload: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.post(url, json=payload) as response:
        return response.status, await response.json()


def body(command: str) -> dict[str, Any]:
    return {"permission": npm(command).to_wire(), "agent": {"id": "sess-1", "labels": {"tool": "codex"}}}


async def test_remove_takes_effect_on_the_running_server_at_once(tmp_path: Path) -> None:
    path = config_file(tmp_path)
    async with program(config_for(tmp_path, RULES)) as (running, channels):
        url = f"{running.base_url}/v1/permissions"
        _, asked = await post(url, body("npm test"))
        await channels["web"].delivery_seen.wait()
        item = AskUserQuestionAnswerItem(id=PERMISSION_ID, selected=[ALWAYS])
        await running.installation.ledger.submit(asked["id"], {PERMISSION_ID: item}, by="alice", via="web")
        status, allowed = await post(url, body("npm test"))
        assert (status, allowed["rule"]["source"]) == (200, "learned")
        assert await run_cli("rules", "remove", allowed["rule"]["id"], "--config", str(path)) == 0
        assert (await post(url, body("npm test")))[0] == 202


async def test_history_shows_rule_lines_of_their_own_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path)
    async with program(config_for(tmp_path, RULES)) as (running, _):
        url = f"{running.base_url}/v1/permissions"
        assert (await post(url, body("git status")))[0] == 200
        mcp = {
            "permission": {
                "agent": "claude",
                "project": "shop",
                "tool": "mcp__github__create_issue",
                "kind": "mcp",
                "request": '{"title":"x"}',
                "detail": "create an issue",
                "server": "github",
            },
            "agent": {"id": "sess-2"},
        }
        assert (await post(url, mcp))[1]["behavior"] == "deny"
    capsys.readouterr()
    assert await run_cli("history", "--config", str(path), "--json") == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["kind"] for line in lines] == ["rule", "rule"]
    first = lines[0]
    assert first["rule"] == {"id": "git-read", "tool": "shell", "match": "git status*", "decision": "allow"} | {
        "source": "config"
    }
    assert (first["decision"], first["agent"]["id"], first["tool"], first["request"]) == (
        "allow",
        "sess-1",
        "Bash",
        "git status",
    )
    assert first["at"] and first["seq"] == 1
    assert (lines[1]["rule"]["id"], lines[1]["decision"], lines[1]["agent"]["id"]) == ("config-2", "deny", "sess-2")

    assert await run_cli("history", "--config", str(path), "--agent", "sess-2", "--json") == 0
    assert [json.loads(line)["rule"]["id"] for line in capsys.readouterr().out.splitlines()] == ["config-2"]

    assert await run_cli("history", "--config", str(path)) == 0
    readable = capsys.readouterr().out.splitlines()
    assert len(readable) == 2
    assert (
        '  rule  allow by rule git-read (config: shell "git status*")  for sess-1 (codex, shop)  Bash "git status"'
        in (readable[0])
    )
    assert "deny by rule config-2" in readable[1] and "mcp__github__create_issue" in readable[1]


async def test_history_keeps_the_shape_of_question_lines_beside_rule_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path)
    async with program(config_for(tmp_path, RULES)) as (running, _):
        url = f"{running.base_url}/v1/permissions"
        await post(url, body("git status"))
        _, asked = await post(url, body("rm -rf build"))
    capsys.readouterr()
    assert await run_cli("history", "--config", str(path), "--json") == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["kind"] for line in lines][:2] == ["rule", "asked"]
    assert set(lines[1]) == {"seq", "at", "question_id", "kind", "channel", "actor", "detail", "prev", "hash"}
    assert lines[1]["question_id"] == asked["id"]
