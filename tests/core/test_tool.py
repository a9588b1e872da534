"""The model-facing tool: schema shapes and every output shape of `execute`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core import AbortController, Agent, AskUserQuestionRequest, Context, UserQuestionError
from core.tool import AskUserQuestionTool

from .helpers import make_context, registry

pytestmark = pytest.mark.anyio

ARGS = {"questions": [{"id": "env", "question": "Deploy where?", "options": [{"label": "Staging (Recommended)"}]}]}


def tool_with(answer: Any) -> tuple[AskUserQuestionTool, list[AskUserQuestionRequest]]:
    ctx = make_context()
    seen: list[AskUserQuestionRequest] = []

    async def answerer(req: AskUserQuestionRequest, next_: Any) -> Any:
        seen.append(req)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    ctx.on("user-questions/request", answerer)
    return AskUserQuestionTool(ctx), seen


async def test_answer_is_compact_json_with_id_selected_custom_in_order() -> None:
    tool, _ = tool_with({"answers": [{"custom": "prod, carefully", "selected": ["A"], "id": "env"}]})
    assert await tool.execute(ARGS) == '{"answers":[{"id":"env","selected":["A"],"custom":"prod, carefully"}]}'


async def test_custom_is_left_out_when_absent_and_skips_keep_their_shape() -> None:
    tool, _ = tool_with({"answers": [{"id": "env", "selected": ["A", "B"]}, {"id": "skip", "selected": []}]})
    assert await tool.execute(ARGS) == '{"answers":[{"id":"env","selected":["A","B"]},{"id":"skip","selected":[]}]}'


async def test_non_ascii_is_kept_readable() -> None:
    tool, _ = tool_with({"answers": [{"id": "env", "selected": [], "custom": "Grüße ✓"}]})
    assert json.loads(await tool.execute(ARGS))["answers"][0]["custom"] == "Grüße ✓"


async def test_arguments_are_mapped_onto_the_request() -> None:
    tool, seen = tool_with({"answers": []})
    args = {
        "questions": [
            {
                "id": "a",
                "question": "Pick?",
                "header": "Pick",
                "options": [{"label": "X", "description": "the x"}, {"label": "Y"}],
                "multi_select": True,
            },
            {"id": "b", "question": "Why?"},
        ]
    }
    await tool.execute(args)
    first, second = seen[0].questions
    assert (first.header, first.multi_select, [o.label for o in first.options or []]) == ("Pick", True, ["X", "Y"])
    assert first.options is not None and first.options[0].description == "the x"
    assert (second.options, second.multi_select, second.header) == (None, False, None)


async def test_arguments_may_arrive_as_a_json_string() -> None:
    tool, seen = tool_with({"answers": []})
    await tool.execute(json.dumps(ARGS))
    assert seen[0].questions[0].id == "env"


async def test_agent_and_signal_are_passed_to_ask() -> None:
    ctx = make_context()
    agent = Agent("coder")
    registry(ctx).enter(agent)
    controller = AbortController()
    seen: list[AskUserQuestionRequest] = []

    async def answerer(req: AskUserQuestionRequest, next_: Any) -> Any:
        seen.append(req)
        return {"answers": []}

    ctx.on("user-questions/request", answerer)
    await AskUserQuestionTool(ctx).execute(ARGS, agent=agent, signal=controller.signal)
    assert seen[0].agent is agent and seen[0].signal is controller.signal


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Error: invalid arguments: questions: Field required"),
        ({"questions": [{"question": "Q?"}]}, "Error: invalid arguments: questions.0.id: Field required"),
        (
            {"questions": [{"id": 7, "question": "Q?"}]},
            "Error: invalid arguments: questions.0.id: Input should be a valid string",
        ),
        ({"questions": "all of them"}, "Error: invalid arguments: questions: Input should be a valid list"),
        (
            {"questions": [{"id": "a", "question": "Q?", "options": [{"description": "d"}]}]},
            "Error: invalid arguments: questions.0.options.0.label: Field required",
        ),
        (
            {"questions": [{"id": "a", "question": "Q?", "multi_select": "yes"}]},
            "Error: invalid arguments: questions.0.multi_select: Input should be a valid boolean",
        ),
        (
            "{not json",
            "Error: arguments are not valid JSON (Expecting property name enclosed in double quotes at position 1)",
        ),
        (
            "[1, 2]",
            "Error: invalid arguments: arguments: Input should be a valid dictionary or instance of _ToolArguments",
        ),
    ],
)
async def test_invalid_arguments_name_the_bad_field(args: Any, message: str) -> None:
    tool, seen = tool_with({"answers": []})
    assert await tool.execute(args) == message
    assert seen == []


async def test_several_problems_are_counted() -> None:
    tool, _ = tool_with({"answers": []})
    result = await tool.execute({"questions": [{}, {}]})
    assert result == "Error: invalid arguments: questions.0.id: Field required (and 3 more problems)"


async def test_empty_questions_reach_ask_and_come_back_as_its_error() -> None:
    tool, _ = tool_with({"answers": []})
    assert await tool.execute({"questions": []}) == "Error: ask_user_question requires at least one question"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ASK_ABORTED", "ask_user_question was aborted before the user answered"),
        ("NO_PROVIDER", "no user-questions answerer accepted the request"),
        ("ASK_TIMEOUT", "nobody answered within 2h"),
    ],
)
async def test_user_question_errors_become_error_text(code: str, message: str) -> None:
    tool, _ = tool_with(UserQuestionError(message, code))
    assert await tool.execute(ARGS) == f"Error: {message}"


async def test_refusals_of_the_seam_come_back_as_error_text() -> None:
    ctx = make_context()
    tool = AskUserQuestionTool(ctx)
    assert await tool.execute(ARGS) == "Error: no user-questions answerer accepted the request"
    assert await tool.execute(ARGS, agent=Agent("ghost")) == (
        "Error: human interaction requires the exact live calling agent when an agent is supplied"
    )
    parent, child = Agent("p"), Agent("c")
    registry(ctx).enter(parent)
    registry(ctx).enter(child, owner=parent)
    assert (await tool.execute(ARGS, agent=child)).startswith("Error: human interaction is unavailable while")
    controller = AbortController()
    controller.abort()
    assert await tool.execute(ARGS, signal=controller.signal) == (
        "Error: ask_user_question was aborted before the user answered"
    )


async def test_a_bug_in_an_answerer_is_not_hidden_as_error_text() -> None:
    tool, _ = tool_with(KeyError("bug"))
    with pytest.raises(KeyError):
        await tool.execute(ARGS)


async def test_without_the_service_the_tool_says_what_to_install() -> None:
    assert (await AskUserQuestionTool(Context()).execute(ARGS)).startswith("Error: no user-questions service")


def test_parameters_are_a_json_schema_object_requiring_questions() -> None:
    tool = AskUserQuestionTool(Context())
    params = tool.parameters
    assert tool.name == "ask_user_question"
    assert params["type"] == "object" and params["required"] == ["questions"]
    item = params["properties"]["questions"]["items"]
    assert set(item["properties"]) == {"id", "question", "header", "options", "multi_select"}
    assert item["required"] == ["id", "question"]
    assert set(item["properties"]["options"]["items"]["properties"]) == {"label", "description"}
    assert item["properties"]["options"]["items"]["required"] == ["label"]
    assert "(Recommended)" in tool.description


def test_openai_and_mcp_shapes() -> None:
    tool = AskUserQuestionTool(Context())
    assert tool.openai_schema() == {
        "type": "function",
        "function": {"name": "ask_user_question", "description": tool.description, "parameters": tool.parameters},
    }
    assert tool.mcp_schema() == {
        "name": "ask_user_question",
        "description": tool.description,
        "inputSchema": tool.parameters,
    }
    json.dumps(tool.openai_schema())
