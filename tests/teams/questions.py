"""The questions the Teams tests ask, and helpers to find a card's actions."""

from __future__ import annotations

from typing import Any

from core import AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption


def choice(**fields: Any) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Staging"), AskUserQuestionOption(label="Production")]
    return AskUserQuestionItem.model_validate({"id": "env", "question": "Deploy where?", "options": options} | fields)


def many(count: int = 8) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label=f"Region {number}, west") for number in range(1, count + 1)]
    return AskUserQuestionItem(id="region", question="Which region?", options=options)


def checks() -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label=label) for label in ("Unit tests", "Lint, strict", "Docs")]
    return AskUserQuestionItem(id="checks", question="Which checks?", options=options, multi_select=True)


def plan(detail: str = "1. Back up the database\n2. Run the migration") -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Approve"), AskUserQuestionOption(label="Request changes")]
    return AskUserQuestionItem(
        id="plan",
        question="Approve the migration plan?",
        detail=detail,
        options=options,
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )


def free() -> AskUserQuestionItem:
    return AskUserQuestionItem(id="name", question="What should the release be called?")


def actions(card: dict[str, Any]) -> list[dict[str, Any]]:
    return list(card.get("actions", []))


def action(card: dict[str, Any], title: str) -> dict[str, Any]:
    """The action whose title starts with `title` (inside a ShowCard too)."""
    for found in actions(card):
        if found["title"].startswith(title):
            return found
        if found["type"] == "Action.ShowCard":
            for inner in actions(found["card"]):
                if inner["title"].startswith(title):
                    return inner
    raise LookupError(f"no action {title!r} in {[a['title'] for a in actions(card)]}")


def texts(card: dict[str, Any]) -> str:
    """Every TextBlock's text in the card, in order, one per line."""
    found: list[str] = []

    def walk(items: list[dict[str, Any]]) -> None:
        for item in items:
            if item.get("type") == "TextBlock":
                found.append(item["text"])
            walk(item.get("items", []))

    walk(card.get("body", []))
    return "\n".join(found)
