"""Question records for the Slack tests, fixed down to their ids and times so that snapshots are stable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionItem

ASKED_AT = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
ANSWERED_AT = datetime(2026, 1, 1, 9, 5, tzinfo=UTC)
AGENT = AgentRef(id="deploy-7", name="deploy-bot")


def item(question: str = "Deploy v2 to production?", **fields: Any) -> AskUserQuestionItem:
    data: dict[str, Any] = {"id": fields.pop("id", "q1"), "question": question}
    if fields.get("options") is not None:
        fields["options"] = [o if isinstance(o, dict) else {"label": o} for o in fields["options"]]
    return AskUserQuestionItem.model_validate(data | fields)


def plan_review() -> AskUserQuestionItem:
    """A plan review with Approve and Reject, the shape most approval tests ask."""
    return item(
        "Approve the migration plan?",
        id="plan",
        detail="## Plan\n1. Drain **node-a**\n2. Migrate",
        options=["Approve", "Reject"],
        intent={"kind": "plan-review", "approve": "Approve"},
    )


def labels(count: int, *, width: int = 0) -> list[str]:
    return [f"Option {n}".ljust(width, "x") for n in range(1, count + 1)]


def record(*questions: AskUserQuestionItem, agent: AgentRef | None = AGENT, **fields: Any) -> QuestionRecord:
    return QuestionRecord(
        id=fields.pop("id", "q_snapshot000000"),
        created_at=ASKED_AT,
        agent=agent,
        questions=list(questions) or [item(options=["Yes (Recommended)", "No"])],
        **fields,
    )


def answered(
    base: QuestionRecord, answers: list[dict[str, Any]], *, by: str = "U0ALICE", via: str = "slack"
) -> QuestionRecord:
    return base.model_copy(
        update={
            "status": "answered",
            "answer": AskUserQuestionAnswer.model_validate({"answers": answers}),
            "answered_by": by,
            "answered_via": via,
            "resolved_at": ANSWERED_AT,
        }
    )


def ended(base: QuestionRecord, status: str, message: str, code: str) -> QuestionRecord:
    update = {"status": status, "error_message": message, "error_code": code, "resolved_at": ANSWERED_AT}
    return base.model_copy(update=update)
