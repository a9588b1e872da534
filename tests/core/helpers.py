"""Small builders shared by the seam's tests."""

from __future__ import annotations

from typing import Any

from core import AgentRegistry, AskUserQuestionItem, AskUserQuestionRequest, Context, UserQuestionService


def make_context() -> Context:
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    return ctx


def question(id: str = "q1", **fields: Any) -> dict[str, Any]:
    return {"id": id, "question": f"Question {id}?", **fields}


def request(*questions: dict[str, Any], **fields: Any) -> AskUserQuestionRequest:
    items = [AskUserQuestionItem.model_validate(item) for item in questions or [question()]]
    return AskUserQuestionRequest(questions=items, **fields)


def answer_first(req: AskUserQuestionRequest) -> dict[str, Any]:
    """An answer that picks each question's first option, as a plain dict (answerers may return dicts)."""
    return {
        "answers": [
            {"id": item.id, "selected": [item.options[0].label] if item.options else []} for item in req.questions
        ]
    }


def service(ctx: Context) -> UserQuestionService:
    found = ctx.user_questions
    assert found is not None
    return found


def registry(ctx: Context) -> AgentRegistry:
    found = ctx.agents
    assert found is not None
    return found
