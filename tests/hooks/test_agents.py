"""Each agent's event → the permission a person is asked about, and a decision → that agent's own answer shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.claude import translate
from bot.claude.translate import DETAIL_LIMIT
from bot.hooks import claude, codex, cursor, details, gemini
from bot.hooks.events import BadEvent
from bot.hooks.plans import Plan
from bot.permissions.prompt import Decision, canonical_input

from .rig import fixture

PLANNERS = {"claude": claude.plan, "codex": codex.plan, "gemini": gemini.plan, "cursor": cursor.plan}
SESSION_FIELD = {"claude": "session_id", "codex": "session_id", "gemini": "session_id", "cursor": "conversation_id"}
SHELL = {
    "claude": "claude/permission_request_bash",
    "codex": "codex/permission_request_bash",
    "gemini": "gemini/before_tool_shell",
    "cursor": "cursor/before_shell_execution",
}


def planned(agent: str, event: dict[str, Any], labels: dict[str, str] | None = None) -> Plan:
    plan = PLANNERS[agent](event, labels or {})
    assert plan is not None
    return plan


# -- who asks ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", list(PLANNERS))
def test_one_session_is_one_agent_and_another_session_another(agent: str) -> None:
    event = fixture(SHELL[agent])
    first, again = planned(agent, event).agent, planned(agent, dict(event)).agent
    other = planned(agent, {**event, SESSION_FIELD[agent]: "another-session"}).agent
    assert first["id"] == again["id"] != other["id"]
    assert first["id"] == f"{agent}-{event[SESSION_FIELD[agent]]}"
    assert first["labels"] == {"tool": agent, "project": "billing-api"} and first["name"] == "billing-api"


@pytest.mark.parametrize("agent", list(PLANNERS))
def test_labels_given_on_the_command_line_are_added_and_override(agent: str) -> None:
    labels = planned(agent, fixture(SHELL[agent]), {"team": "billing", "project": "billing"}).agent["labels"]
    assert labels == {"tool": agent, "project": "billing", "team": "billing"}


def test_claude_code_is_named_alike_by_the_hook_and_by_translate() -> None:
    event = fixture(SHELL["claude"])
    hooked = planned("claude", event, {"team": "billing"}).agent
    assert hooked == translate.agent_of(translate.event_of(event), {"team": "billing"})


def test_cursor_without_a_cwd_is_named_for_its_first_workspace_root() -> None:
    event = {**fixture("cursor/before_mcp_execution"), "workspace_roots": ["/srv/ledger", "/srv/other"]}
    assert planned("cursor", event).agent["labels"]["project"] == "ledger"


@pytest.mark.parametrize("agent", list(PLANNERS))
def test_an_event_without_a_folder_is_named_for_the_agent(agent: str) -> None:
    event = {k: v for k, v in fixture(SHELL[agent]).items() if k not in ("cwd", "workspace_roots")}
    assert planned(agent, event).agent["labels"]["project"] == agent


# -- what the person is asked -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "tool", "command"),
    [
        ("claude", "Bash", "npm run test:unit -- --watch=false"),
        ("codex", "Bash", "git push origin main"),
        ("gemini", "run_shell_command", "rm -rf dist && npm run build"),
        ("cursor", "Shell", "docker compose down -v"),
    ],
)
def test_a_shell_command_is_asked_verbatim(agent: str, tool: str, command: str) -> None:
    plan = planned(agent, fixture(SHELL[agent]))
    assert plan.permission is not None
    assert (plan.permission.kind, plan.permission.tool, plan.permission.request) == ("shell", tool, command)
    (question,) = plan.questions
    assert question["question"] == f"Allow {tool}?" and command in question["detail"]


@pytest.mark.parametrize(
    ("agent", "event", "tool", "server", "shown"),
    [
        ("claude", "claude/permission_request_mcp", "mcp__github__create_issue", "github", "create_issue"),
        ("codex", "codex/permission_request_mcp", "mcp__github__create_issue", "github", "create_issue"),
        ("gemini", "gemini/before_tool_mcp", "mcp_github_create_issue", "github", "create_issue"),
        (
            "cursor",
            "cursor/before_mcp_execution_object",
            "create_issue",
            "https://api.githubcopilot.com/mcp/",
            "create_issue",
        ),
    ],
)
def test_an_mcp_call_names_its_tool_and_server_and_shows_the_input(
    agent: str, event: str, tool: str, server: str, shown: str
) -> None:
    data = fixture(event)
    permission = planned(agent, data).permission
    assert permission is not None
    assert (permission.kind, permission.tool, permission.server) == ("mcp", tool, server)
    assert permission.request == canonical_input(data["tool_input"])
    assert f"`{shown}`" in permission.detail and server in permission.detail
    assert '"title": "Flaky deploy"' in permission.detail


@pytest.mark.parametrize(
    ("agent", "change", "folder"),
    [
        ("cursor", {}, "/home/dev/projects/billing-api"),
        ("gemini", {"tool_input": {"command": "make", "dir_path": "services/api"}}, "services/api"),
    ],
)
def test_the_folder_a_command_runs_in_is_shown(agent: str, change: dict[str, Any], folder: str) -> None:
    permission = planned(agent, {**fixture(SHELL[agent]), **change}).permission
    assert permission is not None and f"In `{folder}`:" in permission.detail


def test_cursors_input_as_a_json_string_is_the_same_request_as_the_object() -> None:
    as_object = fixture("cursor/before_mcp_execution_object")
    as_string = {**as_object, "tool_input": json.dumps(as_object["tool_input"], indent=4)}
    first, second = planned("cursor", as_object).permission, planned("cursor", as_string).permission
    assert first is not None and second is not None and first.request == second.request


def test_cursors_input_that_is_not_json_is_shown_as_it_came() -> None:
    permission = planned("cursor", {**fixture("cursor/before_mcp_execution"), "tool_input": "{not json"}).permission
    assert permission is not None and "{not json" in permission.detail


def test_a_file_write_shows_the_path_and_the_whole_content() -> None:
    data = fixture("gemini/before_tool_write_file")
    permission = planned("gemini", data).permission
    assert permission is not None and permission.kind == "tool"
    assert data["tool_input"]["file_path"] in permission.detail
    assert data["tool_input"]["content"] in permission.detail + "\n"
    assert permission.request == canonical_input(data["tool_input"])


def test_an_edit_shows_the_path_and_the_diff() -> None:
    permission = planned("gemini", fixture("gemini/before_tool_replace")).permission
    assert permission is not None and permission.kind == "tool"
    assert "app/settings.py" in permission.detail
    assert "- DEBUG = True" in permission.detail and "+ DEBUG = False" in permission.detail


def test_codex_apply_patch_shows_the_patch_text() -> None:
    patch = "*** Begin Patch\n*** Update File: app.py\n-x = 1\n+x = 2\n*** End Patch"
    event = {**fixture("codex/permission_request_bash"), "tool_name": "apply_patch", "tool_input": {"command": patch}}
    permission = planned("codex", event).permission
    assert permission is not None and permission.kind == "tool" and patch in permission.detail


def test_claude_write_shows_the_whole_content() -> None:
    content = "".join(f"line {n}\n" for n in range(1, 101))
    event = {**fixture("claude/permission_request_bash"), "tool_name": "Write"}
    event["tool_input"] = {"file_path": "/x/notes.md", "content": content}
    permission = planned("claude", event).permission
    assert permission is not None and permission.kind == "tool"
    assert "Write `/x/notes.md` (100 lines)" in permission.detail and content in permission.detail


def test_claude_tools_are_shown_as_before() -> None:
    event = {**fixture("claude/permission_request_bash"), "tool_name": "Edit"}
    event["tool_input"] = {"file_path": "/x/app.py", "old_string": "a", "new_string": "b"}
    permission = planned("claude", event).permission
    assert permission is not None and permission.kind == "tool" and "Edit `/x/app.py`" in permission.detail


def test_every_agent_cuts_its_detail_where_claude_code_does() -> None:
    assert details.DETAIL_LIMIT == DETAIL_LIMIT


def test_a_command_with_backticks_cannot_close_the_code_block() -> None:
    command = "echo ```done``` && ls"
    permission = planned("cursor", {**fixture("cursor/before_shell_execution"), "command": command}).permission
    assert permission is not None
    assert f"````\n{command}\n````" in permission.detail


def test_a_long_input_is_cut_with_a_note() -> None:
    event = fixture("gemini/before_tool_write_file")
    event["tool_input"]["content"] = "line\n" * 5_000
    permission = planned("gemini", event).permission
    assert permission is not None
    assert len(permission.detail) < DETAIL_LIMIT + 100 and "more characters not shown" in permission.detail


# -- what the agent is told -------------------------------------------------------------------------------------------


ALLOW = Decision("allow", "Allowed by alice through handraise.")
ALWAYS = Decision("allow", "Always allowed by alice through handraise.", always=True)
WORDS = Decision("deny", "use the staging database")


def test_claude_always_allow_returns_its_own_suggestions_unchanged() -> None:
    event = fixture("claude/permission_request_bash")
    decision = planned("claude", event).respond(ALWAYS)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedPermissions": event["permission_suggestions"]}


def test_claude_always_allow_without_suggestions_is_a_plain_allow() -> None:
    event = fixture("claude/permission_request_mcp")
    assert "permission_suggestions" not in event
    decision = planned("claude", event).respond(ALWAYS)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow"}


def test_claude_deny_carries_the_words() -> None:
    output = planned("claude", fixture("claude/permission_request_bash")).respond(WORDS)
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "use the staging database"},
        }
    }


@pytest.mark.parametrize("decision", [ALLOW, ALWAYS, WORDS], ids=["allow", "always", "deny"])
def test_codex_hears_behavior_and_message_and_nothing_else(decision: Decision) -> None:
    output = planned("codex", fixture("codex/permission_request_bash")).respond(decision)
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": decision.behavior, "message": decision.message},
        }
    }


@pytest.mark.parametrize(
    ("decision", "output"),
    [
        (ALLOW, {"decision": "allow"}),
        (ALWAYS, {"decision": "allow"}),
        (WORDS, {"decision": "deny", "reason": "use the staging database"}),
        (Decision("deny", ""), {"decision": "deny", "reason": "Denied through handraise."}),
    ],
    ids=["allow", "always", "deny", "deny without words"],
)
def test_gemini_hears_a_decision_and_for_a_deny_a_reason(decision: Decision, output: dict[str, Any]) -> None:
    assert planned("gemini", fixture("gemini/before_tool_shell")).respond(decision) == output


def test_cursor_hears_the_permission_and_both_messages() -> None:
    plan = planned("cursor", fixture("cursor/before_shell_execution"))
    assert plan.respond(WORDS) == {
        "permission": "deny",
        "agent_message": "use the staging database",
        "user_message": "handraise: use the staging database",
    }
    assert plan.respond(ALLOW)["permission"] == "allow"


def test_claude_ask_user_question_is_asked_as_it_is() -> None:
    event = fixture("claude/pre_tool_use_ask_user_question")
    plan = planned("claude", event)
    assert plan.permission is None
    assert [q["question"] for q in plan.questions] == ["Which framework should the dashboard use?"]
    answer = {"answers": [{"id": "q1", "selected": ["Vue"]}]}
    output = plan.answered(answer, "alice")
    assert output is not None
    assert output["hookSpecificOutput"]["updatedInput"]["answers"] == {
        "Which framework should the dashboard use?": "Vue"
    }
    refused = plan.respond(Decision("deny", "No answer"))["hookSpecificOutput"]
    assert (refused["hookEventName"], refused["permissionDecision"]) == ("PreToolUse", "deny")


def test_claude_leaves_events_it_does_not_answer_alone_without_a_word() -> None:
    event = {**fixture("claude/permission_request_bash"), "hook_event_name": "PostToolUse"}
    assert claude.plan(event, {}) is None


# -- events that are not what the agent documents ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "change"),
    [
        ("codex", {"tool_input": "git status"}),
        ("codex", {"tool_name": None}),
        ("codex", {"hook_event_name": None}),
        ("gemini", {"tool_input": ["rm"]}),
        ("gemini", {"hook_event_name": "AfterTool"}),
        ("cursor", {"command": ""}),
        ("cursor", {"hook_event_name": 7}),
        ("claude", {"tool_input": None}),
    ],
)
def test_an_event_missing_what_it_needs_is_refused(agent: str, change: dict[str, Any]) -> None:
    event = {**fixture(SHELL[agent]), **change}
    with pytest.raises(BadEvent):
        PLANNERS[agent](event, {})


def test_a_cursor_mcp_event_without_a_tool_name_is_refused() -> None:
    event = {k: v for k, v in fixture("cursor/before_mcp_execution").items() if k != "tool_name"}
    with pytest.raises(BadEvent, match="tool_name"):
        cursor.plan(event, {})
