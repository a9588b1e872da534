"""Hook payloads → handraise questions, and answers → hook output: the pure half of `handraise claude-hook`."""

from __future__ import annotations

import json

import pytest

from bot.claude import translate
from bot.claude.translate import NotAHookEvent, parse_event

from . import payloads


def test_ask_user_question_becomes_items_with_ids_by_position() -> None:
    items = translate.questions_of(payloads.ask_user_question()["tool_input"])
    assert [item["id"] for item in items] == ["q1", "q2"]
    assert items[0] == {
        "id": "q1",
        "question": "Which framework should the dashboard use?",
        "header": "Framework",
        "options": [
            {"label": "React (Recommended)", "description": "the team knows it"},
            {"label": "Vue", "description": "smaller bundle"},
        ],
    }
    assert items[1]["multiSelect"] is True


def test_answers_go_back_keyed_by_question_text_with_labels_joined_for_multi_select() -> None:
    tool_input = payloads.ask_user_question()["tool_input"]
    answer = {
        "answers": [
            {"id": "q1", "selected": ["Vue"]},
            {"id": "q2", "selected": ["Unit tests", "Lint"], "custom": "smoke test on staging"},
        ]
    }
    output = translate.pre_tool_use_answer(tool_input, answer)["hookSpecificOutput"]
    assert output["permissionDecision"] == "allow"
    assert output["updatedInput"]["questions"] == tool_input["questions"]
    assert output["updatedInput"]["answers"] == {
        "Which framework should the dashboard use?": "Vue",
        "Which checks should run before deploy?": "Unit tests, Lint, smoke test on staging",
    }


def test_free_text_replaces_a_single_choice_and_a_skipped_question_is_left_out() -> None:
    tool_input = payloads.ask_user_question()["tool_input"]
    answer = {"answers": [{"id": "q1", "selected": [], "custom": "Svelte"}, {"id": "q2", "selected": []}]}
    assert translate.answers_by_text(tool_input, answer) == {"Which framework should the dashboard use?": "Svelte"}


@pytest.mark.parametrize(
    ("payload", "shown"),
    [
        (payloads.BASH, ["Rebuild the release", "```\nrm -rf build && make release\n```"]),
        (payloads.EDIT, ["Edit `/home/dev/projects/billing-api/app/settings.py`", "- DEBUG = True\n+ DEBUG = False"]),
        (payloads.WRITE, ["Write `/home/dev/projects/billing-api/notes.md` (100 lines)", "line 40\n```", "60 more"]),
        (payloads.WEBFETCH, ["Fetch https://example.org/spec", "Summarise the API"]),
        (payloads.MCP, ["MCP tool `create_issue` of server `github`", '"repo": "acme/billing"']),
        (payloads.OTHER, ["NotebookEdit with", '"new_source": "print(1)"']),
    ],
    ids=["bash", "edit", "write", "webfetch", "mcp", "other"],
)
def test_a_permission_prompt_shows_what_the_tool_will_do(payload: dict[str, object], shown: list[str]) -> None:
    question = translate.permission_question(parse_event(json.dumps(payload)))
    assert question["question"] == f"Allow {payload['tool_name']}?"
    assert question["intent"] == {"kind": "plan-review", "approve": "Allow", "reject": "Deny…"}
    assert [option["label"] for option in question["options"]] == ["Allow", "Deny…"]
    for part in shown:
        assert part in question["detail"]


def test_a_write_shows_only_the_head_of_the_content() -> None:
    detail = translate.permission_question(parse_event(json.dumps(payloads.WRITE)))["detail"]
    assert "line 41" not in detail


def test_backticks_in_a_command_cannot_close_its_code_block() -> None:
    detail = translate.describe_tool("Bash", {"command": "echo ```; rm -rf /"})
    assert detail.startswith("````\n") and detail.endswith("\n````")


def test_an_oversize_input_is_cut_and_says_so() -> None:
    detail = translate.describe_tool("Bash", {"command": "x" * 50_000})
    assert len(detail) < translate.DETAIL_LIMIT + 100
    assert detail.endswith("more characters not shown)")


@pytest.mark.parametrize(
    ("item", "decision"),
    [
        ({"selected": ["Allow"]}, {"behavior": "allow"}),
        (
            {"selected": [], "custom": "use make clean instead"},
            {"behavior": "deny", "message": "use make clean instead"},
        ),
        ({"selected": ["Deny…"]}, {"behavior": "deny", "message": "Denied by alice through handraise."}),
    ],
    ids=["allow", "free text denies with the reason", "deny"],
)
def test_the_answer_becomes_the_permission_decision(item: dict[str, object], decision: dict[str, str]) -> None:
    output = translate.permission_decision({"answers": [{"id": "permission", **item}]}, "alice")
    assert output == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def test_a_skipped_permission_question_leaves_the_decision_to_claude_code() -> None:
    assert translate.permission_decision({"answers": [{"id": "permission", "selected": []}]}, None) is None


def test_the_agent_is_the_session_named_for_its_project_folder() -> None:
    event = parse_event(json.dumps(payloads.BASH))
    assert translate.agent_of(event, {"team": "billing"}) == {
        "id": f"claude-{payloads.SESSION}",
        "name": "billing-api",
        "labels": {"tool": "claude", "project": "billing-api", "team": "billing"},
    }


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "[1, 2]",
        '{"hook_event_name": "PreToolUse"}',
        '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "rm -rf /"}',
        "\udcff",
    ],
    ids=["empty", "not json", "an array", "no tool", "input not an object", "lone surrogate"],
)
def test_garbage_is_not_a_hook_event(text: str) -> None:
    with pytest.raises(NotAHookEvent):
        parse_event(text)


@pytest.mark.parametrize(
    "tool_input",
    [
        {},
        {"questions": []},
        {"questions": ["Which?"]},
        {"questions": [{"question": "Which?", "options": "a,b"}]},
        {"questions": [{"question": "Which?", "options": [{"description": "no label"}]}]},
    ],
    ids=["no questions", "empty", "a string", "options not a list", "an option without label"],
)
def test_malformed_ask_user_question_input_is_refused(tool_input: dict[str, object]) -> None:
    with pytest.raises(NotAHookEvent):
        translate.questions_of(tool_input)


def test_ask_user_question_arriving_as_a_permission_request_is_answered_there() -> None:
    tool_input = payloads.ask_user_question()["tool_input"]
    answer = {"answers": [{"id": "q1", "selected": ["Vue"]}]}
    output = translate.permission_answer(tool_input, answer)["hookSpecificOutput"]
    assert output["hookEventName"] == "PermissionRequest"
    assert output["decision"] == {
        "behavior": "allow",
        "updatedInput": {
            "questions": tool_input["questions"],
            "answers": {"Which framework should the dashboard use?": "Vue"},
        },
    }
