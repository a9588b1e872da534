"""Writes the Adaptive Cards that docs/teams-setup.md links to, from the channel's own renderer: a question, a plan
review, a multi-select question and an answered card. Paste one into the Adaptive Cards designer to see it drawn.

Run: `uv run python docs/tools/teams_preview.py` (tests/teams/test_preview.py checks the files are current).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.store.records import AgentRef, QuestionRecord
from bot.teams.cards import render_outcome, render_question
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionIntent, AskUserQuestionItem

DOCS = Path(__file__).resolve().parents[1]
WHEN = datetime(2026, 12, 6, 10, 4, tzinfo=UTC)
AGENT = AgentRef(id="deploy-7", name="deploy-bot")


def _record(question: AskUserQuestionItem, **fields: Any) -> QuestionRecord:
    return QuestionRecord(id="q_preview", created_at=WHEN, agent=AGENT, questions=[question], **fields)


def _question() -> AskUserQuestionItem:
    return AskUserQuestionItem.model_validate(
        {
            "id": "env",
            "header": "Deploy target",
            "question": "Where should v2.4.1 go first?",
            "options": [
                {"label": "Staging", "description": "the usual path"},
                {"label": "Production", "description": "skips staging; the change is a copy fix"},
            ],
        }
    )


def _plan() -> AskUserQuestionItem:
    return AskUserQuestionItem(
        id="plan",
        question="Approve the migration plan?",
        detail="1. Back up the orders database\n2. Add the `shipped_at` column\n3. Backfill it from the events table",
        options=[{"label": "Approve"}, {"label": "Request changes"}],  # type: ignore[list-item]
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )


def _checks() -> AskUserQuestionItem:
    return AskUserQuestionItem.model_validate(
        {
            "id": "checks",
            "question": "Which checks should run before the release?",
            "multiSelect": True,
            "options": [{"label": "Unit tests"}, {"label": "Lint"}, {"label": "End-to-end"}, {"label": "Docs"}],
        }
    )


def cards() -> dict[str, dict[str, Any]]:
    """Each preview file's name and the card it holds."""
    answered = _record(
        _question(),
        status="answered",
        answer=AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="env", selected=["Staging"])]),
        answered_by="alice@example.org",
        answered_via="teams",
        resolved_at=WHEN,
    )
    made = {
        "teams-preview-question.json": render_question(_record(_question())),
        "teams-preview-plan-review.json": render_question(_record(_plan())),
        "teams-preview-multi-select.json": render_question(_record(_checks())),
        "teams-preview-answered.json": render_outcome(answered, {"alice@example.org": "Alice Archer"}),
    }
    return {name: activity["attachments"][0]["content"] for name, activity in made.items()}


def main() -> None:
    for name, card in cards().items():
        (DOCS / name).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
