"""The model-facing `ask_user_question` tool: JSON-schema arguments in, compact JSON answer (or `Error: …`) out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from core.abort import AbortSignal
from core.agents import Agent
from core.context import Context
from core.errors import UserQuestionError
from core.types import AskUserQuestionAnswer, AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest

DESCRIPTION = (
    "Ask the user one or more questions and wait for their answers. Use it when you need a human decision, "
    "a preference, or information only the user has; do not use it for things you can find out yourself. "
    "Give each question a short unique id. Offer options when the answer is a choice; put the option you "
    'recommend first and add "(Recommended)" to its label. Set multi_select when several options may be '
    "chosen. The user can always answer in their own words instead. The result is JSON: "
    '{"answers":[{"id":…,"selected":[labels],"custom":"free text, when given"}]}; an empty selected list with '
    "no custom text means the user skipped that question."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "description": "The questions to ask, shown together.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Short unique id; the answer carries it back."},
                    "question": {"type": "string", "description": "The complete question, ending with '?'."},
                    "header": {"type": "string", "description": "A very short label or title for the question."},
                    "options": {
                        "type": "array",
                        "description": "The choices. Put the recommended one first, labelled '(Recommended)'.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string", "description": "What the user picks (1-5 words)."},
                                "description": {"type": "string", "description": "What this choice means."},
                            },
                            "required": ["label"],
                        },
                    },
                    "multi_select": {"type": "boolean", "description": "Allow choosing several options."},
                },
                "required": ["id", "question"],
            },
        }
    },
    "required": ["questions"],
}


class _ToolOption(BaseModel):
    model_config = ConfigDict(strict=True)

    label: str
    description: str | None = None


class _ToolQuestion(BaseModel):
    model_config = ConfigDict(strict=True)

    id: str
    question: str
    header: str | None = None
    options: list[_ToolOption] | None = None
    multi_select: bool | None = None


class _ToolArguments(BaseModel):
    model_config = ConfigDict(strict=True)

    questions: list[_ToolQuestion]


class AskUserQuestionTool:
    """`ask_user_question` over `ctx.user_questions`. It registers no answerer; the checks all live in `ask()`."""

    name = "ask_user_question"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI-style function definition (`tools=[...]` in chat completions)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def mcp_schema(self) -> dict[str, Any]:
        """The tool as an MCP `tools/list` entry."""
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}

    async def execute(
        self, args: Mapping[str, Any] | str, *, agent: Agent | None = None, signal: AbortSignal | None = None
    ) -> str:
        """Ask and return the compact JSON answer, or `Error: <message>` for bad arguments or a refused ask.

        Failures other than `UserQuestionError` (bugs) propagate.
        """
        try:
            questions = parse_questions(args)
        except ValueError as invalid:
            return f"Error: {invalid}"
        service = self._ctx.user_questions
        if service is None:
            return "Error: no user-questions service is installed (ctx.plugin(UserQuestionService))"
        request = AskUserQuestionRequest(questions=questions, agent=agent, signal=signal)
        try:
            answer = await service.ask(request)
        except UserQuestionError as refused:
            return f"Error: {refused.message}"
        return format_answer(answer)


def parse_questions(args: Mapping[str, Any] | str) -> list[AskUserQuestionItem]:
    """The tool's arguments (a mapping or its JSON text) as question items; raises ValueError naming the first problem.

    For transports that carry the tool elsewhere (MCP), so they accept exactly what `execute` accepts.
    """
    arguments = _parse_arguments(args)
    return [
        AskUserQuestionItem(
            id=question.id,
            question=question.question,
            header=question.header,
            options=None
            if question.options is None
            else [
                AskUserQuestionOption(label=option.label, description=option.description) for option in question.options
            ],
            multi_select=bool(question.multi_select),
        )
        for question in arguments.questions
    ]


def format_answer(answer: AskUserQuestionAnswer) -> str:
    """`{"answers":[{"id":..,"selected":[..],"custom":..}]}` with no spaces and `custom` only when present."""
    items: list[dict[str, Any]] = []
    for item in answer.answers:
        entry: dict[str, Any] = {"id": item.id, "selected": list(item.selected)}
        if item.custom is not None:
            entry["custom"] = item.custom
        items.append(entry)
    return json.dumps({"answers": items}, separators=(",", ":"), ensure_ascii=False)


def _parse_arguments(args: Mapping[str, Any] | str) -> _ToolArguments:
    """Validate the model's arguments; raises ValueError naming the first bad field."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as bad:
            raise ValueError(f"arguments are not valid JSON ({bad.msg} at position {bad.pos})") from None
    try:
        return _ToolArguments.model_validate(args)
    except ValidationError as invalid:
        problems = invalid.errors()
        where = ".".join(str(part) for part in problems[0]["loc"]) or "arguments"
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ValueError(f"invalid arguments: {where}: {problems[0]['msg']}{more}") from None
