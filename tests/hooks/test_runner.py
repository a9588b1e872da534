"""The runner against a stub serve: a rule's 200 decides at once, a 202 is waited for, a 404 (an older serve) is
asked through /v1/questions, and every reply it cannot use gives the agent's fallback with one line on stderr."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from bot.cli import main
from bot.permissions.prompt import ALLOW, ALWAYS, Permission, question

from .rig import AGENTS, fixture
from .stub import Reply, stub_server

SHELL_EVENTS = {
    "claude": "claude/permission_request_bash",
    "codex": "codex/permission_request_bash",
    "gemini": "gemini/before_tool_shell",
    "cursor": "cursor/before_shell_execution",
}
FALLBACK = {"claude": "", "codex": "", "gemini": "", "cursor": '{"permission": "ask"}\n'}
RULE = {"id": "r1", "tool": "shell", "match": "git *", "decision": "allow", "source": "config"}
PENDING = {"id": "q_1", "status": "pending"}
ALLOWED_BY_RULE: dict[tuple[str, str], Reply] = {
    ("POST", "/v1/permissions"): (200, {"behavior": "allow", "message": "ok", "rule": RULE})
}


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    def output(self) -> Any:
        return json.loads(self.stdout)


def run(
    agent: str, url: str, capsys: pytest.CaptureFixture[str], *flags: str, event: dict[str, Any] | None = None
) -> Ran:
    raw = json.dumps(event if event is not None else fixture(SHELL_EVENTS[agent])).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        patch.delenv("HANDRAISE_API_TOKEN", raising=False)
        code = main(["hook", agent, "--server", url, *flags])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def answered(label: str | None = None, custom: str | None = None, status: str = "answered") -> Reply:
    item: dict[str, Any] = {"id": "permission", "selected": [label] if label else []}
    if custom:
        item["custom"] = custom
    return 200, {"id": "q_1", "status": status, "answer": {"answers": [item]}, "resolvedBy": "alice"}


def behavior_and_message(agent: str, output: Any) -> tuple[str, str | None]:
    """What the agent was told, whatever its shape."""
    if agent in ("claude", "codex"):
        decision = output["hookSpecificOutput"]["decision"]
        return decision["behavior"], decision.get("message")
    if agent == "gemini":
        return output["decision"], output.get("reason")
    return output["permission"], output["agent_message"]


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_a_rule_decides_at_once_with_its_message(agent: str, decision: str, capsys: pytest.CaptureFixture[str]) -> None:
    said = f"{decision} by rule r1 (git *)"
    ruled = (200, {"behavior": decision, "message": said, "rule": RULE})
    with stub_server({("POST", "/v1/permissions"): ruled}) as stub:
        ran = run(agent, stub.url, capsys)
    assert (ran.code, ran.stderr) == (0, "")
    behavior, message = behavior_and_message(agent, ran.output())
    assert behavior == decision
    if decision == "deny" or agent in ("codex", "cursor"):
        assert message == said
    assert stub.paths("POST") == ["/v1/permissions"] and stub.paths("GET") == []


@pytest.mark.parametrize("agent", AGENTS)
def test_the_permission_sent_is_the_contracts_shape(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    with stub_server(ALLOWED_BY_RULE) as stub:
        run(agent, stub.url, capsys, "--label", "team=billing")
    body = stub.body_of("POST", "/v1/permissions")
    assert set(body) == {"permission", "agent"}
    permission = Permission.from_wire(body["permission"])
    assert (permission.agent, permission.project, permission.kind) == (agent, "billing-api", "shell")
    assert permission.request in permission.detail
    assert body["agent"]["labels"] == {"tool": agent, "project": "billing-api", "team": "billing"}


def test_a_rule_never_gives_claude_its_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    # updatedPermissions is for the person's "Always allow" only: a rule's allow is not Claude Code's to remember.
    with stub_server(ALLOWED_BY_RULE) as stub:
        ran = run("claude", stub.url, capsys)
    assert ran.output() == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }


@pytest.mark.parametrize("agent", AGENTS)
def test_a_202_is_waited_for_and_read(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    replies = {("POST", "/v1/permissions"): (202, PENDING), ("GET", "/v1/questions/q_1"): answered(ALLOW)}
    with stub_server(replies) as stub:
        ran = run(agent, stub.url, capsys)
    assert (ran.code, ran.stderr) == (0, "")
    assert behavior_and_message(agent, ran.output())[0] == "allow"
    assert stub.paths("POST") == ["/v1/permissions"]


@pytest.mark.parametrize("agent", AGENTS)
def test_an_older_serve_is_asked_the_same_question_through_v1_questions(
    agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = {("POST", "/v1/questions"): (202, PENDING), ("GET", "/v1/questions/q_1"): answered(ALWAYS)}
    with stub_server(replies) as stub:
        ran = run(agent, stub.url, capsys)
    assert (ran.code, ran.stderr) == (0, "")
    assert behavior_and_message(agent, ran.output())[0] == "allow"
    assert stub.paths("POST") == ["/v1/permissions", "/v1/questions"]
    sent = stub.body_of("POST", "/v1/permissions")
    asked = stub.body_of("POST", "/v1/questions")
    assert asked == {"questions": [question(Permission.from_wire(sent["permission"]))], "agent": sent["agent"]}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(
    "reply",
    [
        (200, {"behavior": "maybe", "message": "?"}),
        (200, b"<html>not json</html>"),
        (202, {"status": "pending"}),
        (500, {"error": {"code": "STORE", "message": "the store is down"}}),
        (400, {"error": {"code": "BAD_REQUEST", "message": "permission.kind must be shell, mcp or tool"}}),
    ],
    ids=["rule without a decision", "not JSON", "202 without an id", "server error", "refused"],
)
def test_a_reply_it_cannot_use_falls_back(agent: str, reply: Reply, capsys: pytest.CaptureFixture[str]) -> None:
    with stub_server({("POST", "/v1/permissions"): reply}) as stub:
        ran = run(agent, stub.url, capsys)
    assert (ran.code, ran.stdout) == (0, FALLBACK[agent])
    assert len(ran.stderr.splitlines()) == 1 and ran.stderr.startswith(f"handraise hook {agent}: ")
    assert stub.paths("POST") == ["/v1/permissions"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_skipped_question_falls_back(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    replies = {("POST", "/v1/permissions"): (202, PENDING), ("GET", "/v1/questions/q_1"): answered()}
    with stub_server(replies) as stub:
        ran = run(agent, stub.url, capsys)
    assert (ran.code, ran.stdout) == (0, FALLBACK[agent])
    assert "skipped" in ran.stderr


@pytest.mark.parametrize("agent", AGENTS)
def test_a_question_expired_by_serve_is_a_timeout(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    replies = {("POST", "/v1/permissions"): (202, PENDING), ("GET", "/v1/questions/q_1"): answered(status="expired")}
    with stub_server(replies) as stub:
        fallback = run(agent, stub.url, capsys)
        denied = run(agent, stub.url, capsys, "--on-timeout", "deny", "--timeout", "2m")
    assert (fallback.code, fallback.stdout) == (0, FALLBACK[agent])
    assert behavior_and_message(agent, denied.output()) == ("deny", "No answer through handraise within 2m; denied.")


@pytest.mark.parametrize("flags", [("--label", "no-equals"), ("--timeout", "soon")], ids=["label", "timeout"])
def test_a_bad_flag_falls_back_without_asking(flags: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with stub_server({}) as stub:
        ran = run("cursor", stub.url, capsys, *flags)
    assert (ran.code, ran.stdout) == (0, FALLBACK["cursor"])
    assert stub.asked == []


def test_the_token_is_sent_as_a_bearer(capsys: pytest.CaptureFixture[str]) -> None:
    refused = (401, {"error": {"code": "UNAUTHORIZED", "message": "a bearer token is required"}})
    event = json.dumps(fixture(SHELL_EVENTS["codex"])).encode()
    with stub_server({("POST", "/v1/permissions"): refused}) as stub, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HANDRAISE_API_TOKEN", "s3cret")
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(event)))
        assert main(["hook", "codex", "--server", stub.url]) == 0
    assert stub.authorizations == ["Bearer s3cret"]
    assert "UNAUTHORIZED" in capsys.readouterr().err
