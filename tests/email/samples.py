"""Questions and the mail the bot sends for them, shared by the email tests."""

from __future__ import annotations

from bot.email.render import render_text
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem

DATABASE = AskUserQuestionItem.model_validate(
    {
        "id": "db",
        "question": "Which database should the new service use?",
        "header": "Database",
        "options": [
            {"label": "Postgres (Recommended)", "description": "Mature, and already in use by two services"},
            {"label": "SQLite", "description": "Simplest to run"},
            {"label": "MySQL"},
        ],
    }
)
FEATURES = AskUserQuestionItem.model_validate(
    {
        "id": "features",
        "question": "Which features go into the first release?",
        "multiSelect": True,
        "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Search and replace"}, {"label": "Export"}],
    }
)
PLAN = AskUserQuestionItem.model_validate(
    {
        "id": "plan",
        "question": "Approve the migration plan?",
        "detail": "1. Freeze writes\n2. Copy the tables\n3. Switch the DSN",
        "intent": {"kind": "plan-review", "approve": "Approve"},
        "options": [{"label": "Approve"}, {"label": "Request changes"}],
    }
)
NAME = AskUserQuestionItem.model_validate({"id": "name", "question": "What should the service be called?"})

ONE = QuestionRecord(questions=[DATABASE])
THREE = QuestionRecord(questions=[DATABASE, FEATURES, PLAN])
SENT = render_text(ONE)
SENT_THREE = render_text(THREE)


def quoted(text: str, prefix: str = "> ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


def wrapped(text: str, width: int = 60) -> str:
    """Re-wrap every line at `width`, as some clients do when they quote."""
    import textwrap

    return "\n".join(textwrap.fill(line, width) if line.strip() else "" for line in text.splitlines())
