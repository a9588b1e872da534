"""`POST /v1/permissions` on a running program: rules decide at once (and are audited), the rest is asked as a
question, "Always allow" teaches a rule the next identical request finds, and no body makes it fail."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, DENY, PERMISSION_ID, Permission, question
from bot.permissions.rules import learned_id
from bot.program import Running
from bot.store.sqlite.async_store import SqliteStore
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
tool = "shell"
match = "git push*"
decision = "deny"

[[rules]]
tool = "shell"
match = "git *"
decision = "allow"
"""
CONFIG = {"source": "config"}
AGENT = {"id": "sess-1", "name": "Codex", "labels": {"tool": "codex", "project": "shop"}}


def permission(command: str, **more: Any) -> dict[str, Any]:
    fields = {"agent": "codex", "project": "shop", "tool": "Bash", "kind": "shell", "request": command}
    return fields | {"detail": command} | more


def body(command: str, **more: Any) -> dict[str, Any]:
    return {"permission": permission(command, **more), "agent": AGENT}


async def call(method: str, url: str, payload: Any = None, **kwargs: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=payload, **kwargs) as response:
        return response.status, await response.json()


async def send(running: Running, payload: Any) -> tuple[int, Any]:
    return await call("POST", f"{running.base_url}/v1/permissions", payload)


async def choose(running: Running, question_id: str, label: str | None = None, custom: str | None = None) -> None:
    item = AskUserQuestionAnswerItem(id=PERMISSION_ID, selected=[label] if label else [], custom=custom)
    await running.installation.ledger.submit(question_id, {PERMISSION_ID: item}, by="alice", via="web")


async def test_a_rule_decides_at_once_and_says_which(tmp_path: Path) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, channels):
        status, allowed = await send(running, body("git status --short"))
        assert status == 200
        assert allowed == {
            "behavior": "allow",
            "message": "Allowed by handraise rule git-read (in the config).",
            "rule": {"id": "git-read", "tool": "shell", "match": "git status*", "decision": "allow"} | CONFIG,
        }
        status, denied = await send(running, body("git push --force"))
        assert (status, denied["behavior"], denied["rule"]["id"]) == (200, "deny", "config-2")
        assert channels["web"].delivered == []


async def test_a_rule_decision_is_an_audit_line_of_its_own(tmp_path: Path) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, _):
        await send(running, body("git push origin main"))
        [line] = await running.installation.ledger.store.history(agent_id="sess-1")
    assert (line.kind, line.question_id, line.actor) == ("rule", None, "sess-1")
    assert line.detail["rule"] == {
        "id": "config-2",
        "tool": "shell",
        "match": "git push*",
        "decision": "deny",
        "source": "config",
    }
    assert line.detail["decision"] == "deny"
    assert line.detail["permission"] == {
        "agent": "codex",
        "project": "shop",
        "tool": "Bash",
        "kind": "shell",
        "request": "git push origin main",
    }
    assert line.detail["agent"] == AGENT


async def test_a_compound_command_with_a_part_no_rule_allows_is_asked(tmp_path: Path) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, channels):
        status, asked = await send(running, body("git status && rm -rf build"))
        assert (status, asked["status"]) == (202, "pending")
        await channels["web"].delivery_seen.wait()
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{asked['id']}")
    expected = question(running_permission("git status && rm -rf build"))
    assert shown["questions"][0]["question"] == "Allow Bash?"
    assert shown["questions"][0]["detail"] == expected["detail"]
    assert [option["label"] for option in shown["questions"][0]["options"]] == [ALLOW, DENY, ALWAYS]
    assert shown["agent"] == AGENT


def running_permission(command: str) -> Permission:
    return Permission.from_wire(permission(command))


async def test_a_compound_command_with_a_denied_part_is_denied(tmp_path: Path) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, _):
        status, denied = await send(running, body("git status; git push --force"))
    assert (status, denied["behavior"], denied["rule"]["match"]) == (200, "deny", "git push*")


async def test_always_allow_lets_the_identical_request_through_at_once(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        _, asked = await send(running, body("npm test"))
        await channels["web"].delivery_seen.wait()
        await choose(running, asked["id"], ALWAYS)
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{asked['id']}?wait=5")
        assert shown["status"] == "answered"
        status, again = await send(running, body("npm test"))  # as soon as the hook reads the answer
        assert status == 200
        assert again["behavior"] == "allow"
        assert again["rule"] == {
            "id": learned_id(running_permission("npm test")),
            "tool": "Bash",
            "match": "npm test",
            "decision": "allow",
            "source": "learned",
        }
        assert "learned" in again["message"]
        for other in (body("npm test "), body("npm test", project="other"), body("npm test", agent="claude")):
            assert (await send(running, other))[0] == 202
        lines = await running.installation.ledger.store.history(kinds=["rule"])
    assert [line.detail["rule"]["source"] for line in lines] == ["learned"]


@pytest.mark.parametrize(("label", "custom"), [(ALLOW, None), (DENY, None), (None, "use yarn")])
async def test_any_other_answer_learns_nothing(tmp_path: Path, label: str | None, custom: str | None) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        _, asked = await send(running, body("npm test"))
        await channels["web"].delivery_seen.wait()
        await choose(running, asked["id"], label, custom)
        assert (await send(running, body("npm test")))[0] == 202
        assert await running.installation.ledger.store.learned_rules() == []


async def test_a_learned_rule_survives_a_restart_and_its_removal_counts_at_once(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    async with program(config) as (running, channels):
        _, asked = await send(running, body("make deploy"))
        await channels["web"].delivery_seen.wait()
        await choose(running, asked["id"], ALWAYS)
    async with program(config) as (running, _):
        status, again = await send(running, body("make deploy"))
        assert (status, again["rule"]["source"]) == (200, "learned")
        other = SqliteStore.open(config.store.path)  # `handraise rules remove`, from another process
        try:
            assert await other.forget_rule(again["rule"]["id"])
        finally:
            await other.close()
        assert (await send(running, body("make deploy")))[0] == 202


async def test_an_agent_no_channel_takes_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    extra = '[[web.subscriptions]]\nlabels = { team = "infra" }\n'
    async with program(config_for(tmp_path, extra)) as (running, _):
        status, refused = await send(running, body("ls"))
        assert (status, refused["error"]["code"]) == (422, "NO_PROVIDER")
        infra = {"permission": permission("ls"), "agent": AGENT | {"labels": {"team": "infra"}}}
        assert (await send(running, infra))[0] == 202


async def test_the_token_guards_it_as_every_v1_path(tmp_path: Path) -> None:
    config = config_for(tmp_path, RULES, environ={"HR_TOKEN": "s3cret"})
    config = config.model_copy(update={"server": config.server.model_copy(update={"api_token_env": "HR_TOKEN"})})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HR_TOKEN", "s3cret")
        async with program(config) as (running, _):
            url = f"{running.base_url}/v1/permissions"
            assert (await call("POST", url, body("git status")))[0] == 401
            auth = {"Authorization": "Bearer s3cret"}
            assert (await call("POST", url, body("git status"), headers=auth))[0] == 200


HOSTILE: list[tuple[Any, int, str]] = [
    ([], 422, "BAD_REQUEST"),
    ("permission", 422, "BAD_REQUEST"),
    ({}, 422, "BAD_REQUEST"),
    ({"permission": None}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls"), "extra": 1}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"agent": "copilot"}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"kind": "exec"}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"request": 7}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"request": ["ls"]}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"request": ""}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"request": "ls\x00"}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"detail": "   "}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"project": "a\nb"}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"project": "p" * 101}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"tool": "t" * 201}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"detail": "d" * 70_000}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls") | {"server": 3}}, 422, "BAD_REQUEST"),
    ({"permission": {k: v for k, v in permission("ls").items() if k != "tool"}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls"), "agent": {"id": ""}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls"), "agent": {"id": "a", "labels": {"k": 1}}}, 422, "BAD_REQUEST"),
    ({"permission": permission("ls"), "agent": "sess-1"}, 422, "BAD_REQUEST"),
]


@pytest.mark.parametrize(("payload", "status", "code"), HOSTILE)
async def test_a_malformed_body_is_refused_in_the_apis_error_shape(
    tmp_path: Path, payload: Any, status: int, code: str
) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, channels):
        got, refused = await send(running, payload)
        assert (got, refused["error"]["code"]) == (status, code)
        assert refused["error"]["message"]
        assert channels["web"].delivered == []


async def test_raw_garbage_oversize_and_deep_nesting_are_refused_never_a_500(tmp_path: Path) -> None:
    async with program(config_for(tmp_path, RULES)) as (running, _):
        url = f"{running.base_url}/v1/permissions"
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession() as session:
            for raw, expected in (
                (b"not json", 400),
                (b"\xff\xfe", 400),
                (b"[" * 100_000 + b"]" * 100_000, 400),
                (json.dumps(body("x" * (1024 * 1024 + 10))).encode(), 413),
                (b"{" + b'"a":1,' * 10 + b'"b":2}', 422),
            ):
                async with session.post(url, data=io.BytesIO(raw), headers=headers) as response:
                    assert response.status == expected, raw[:40]
                    assert (await response.json())["error"]["code"]
            async with session.post(url, data=b"{}", headers={"Content-Type": "text/plain"}) as response:
                assert response.status == 415


async def test_a_huge_hostile_command_is_asked_not_choked_on(tmp_path: Path) -> None:
    command = "git status " + "$(" * 5_000 + ")" * 5_000 + " && " + "a'" * 1000
    async with program(config_for(tmp_path, RULES)) as (running, _):
        status, reply = await send(running, body(command, detail="a long command"))
    assert (status, reply["status"]) == (202, "pending")
