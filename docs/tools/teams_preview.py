"""Writes the Adaptive Cards that docs/teams-setup.md links to, from the channel's own renderer (a question, a plan
review, a multi-select question and an answered card), and draws two of them as Teams-like pictures.

`card_to_html` is pure: a card in, a self-contained page out (no scripts, no external resources). It draws the part
of Adaptive Cards handraise uses (TextBlock with bold, italics and code, Container, Input.ChoiceSet, Input.Text and
the actions); every piece of text is escaped, so nothing from a card reaches the page raw.

Run: `uv run python docs/tools/teams_preview.py` (tests/teams/test_preview.py checks the files are current).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.store.records import AgentRef, QuestionRecord
from bot.teams.cards import render_outcome, render_question
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionIntent, AskUserQuestionItem

DOCS = Path(__file__).resolve().parents[1]
WHEN = datetime(2026, 12, 6, 10, 4, tzinfo=UTC)
AGENT = AgentRef(id="deploy-7", name="deploy-bot")
IMAGES = {"teams-preview-plan-review.json": "teams-message.png", "teams-preview-answered.json": "teams-answered.png"}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
VIEWPORT_WIDTH = 520


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


# --- drawing ---------------------------------------------------------------------------------------------------------

_INLINE = [
    (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"),
    (re.compile(r"(?<![\w])_(.+?)_(?![\w])"), r"<i>\1</i>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
]
STYLE = """
body { margin: 0; background: #f5f5f5; font: 14px/1.45 "Segoe UI", system-ui, sans-serif; color: #242424; }
#message { display: flex; gap: 10px; padding: 14px; width: 480px; }
.avatar { width: 32px; height: 32px; border-radius: 6px; background: #4f6bed; color: #fff; font-weight: 600;
          display: flex; align-items: center; justify-content: center; flex: none; }
.who { font-size: 12px; color: #616161; margin-bottom: 4px; } .who b { color: #242424; }
.card { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 12px 14px; }
.text { margin: 4px 0; white-space: pre-wrap; } .small { font-size: 12px; color: #616161; }
.medium { font-size: 15px; } .bolder { font-weight: 600; } .mono { font-family: Consolas, monospace; font-size: 13px; }
.emphasis { background: #f0f0f0; border-radius: 4px; padding: 6px 8px; margin: 6px 0; }
.choice { margin: 3px 0; } .box { border: 1px solid #d1d1d1; border-radius: 4px; padding: 6px; color: #8a8a8a; }
.actions { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 10px; }
.action { border: 1px solid #d1d1d1; border-radius: 4px; padding: 5px 12px; font-weight: 600; background: #fff; }
.positive { background: #5b5fc7; border-color: #5b5fc7; color: #fff; }
code { font-family: Consolas, monospace; background: #f0f0f0; padding: 0 3px; border-radius: 3px; }
"""


PICTURED = {"✅": "✔", "🚫": "✖", "⌛": "⧗", "☑️": "☑", "⚠️": "⚠", "⏰": "⏲"}
"""Emoji drawn as symbols the machine's fonts have (Teams shows the emoji themselves)."""


def inline(text: str) -> str:
    """A TextBlock's text as HTML: escaped first, then the markdown handraise writes (bold, italics, code)."""
    for emoji, symbol in PICTURED.items():
        text = text.replace(emoji, symbol)
    shown = html.escape(text)
    for pattern, replacement in _INLINE:
        shown = pattern.sub(replacement, shown)
    return shown


def _element(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "TextBlock":
        classes = ["text", str(item.get("size", "")), str(item.get("weight", ""))]
        classes += ["mono"] if item.get("fontType") == "monospace" else []
        classes += ["small"] if item.get("isSubtle") else []
        return f'<div class="{" ".join(c for c in classes if c)}">{inline(str(item.get("text", "")))}</div>'
    if kind == "Container":
        inner = "".join(_element(child) for child in item.get("items", []))
        return f'<div class="{"emphasis" if item.get("style") == "emphasis" else ""}">{inner}</div>'
    if kind == "Input.ChoiceSet":
        mark = "☐" if item.get("isMultiSelect") else "○"
        choices = "".join(
            f'<div class="choice">{mark} {html.escape(str(choice.get("title", "")))}</div>'
            for choice in item.get("choices", [])
        )
        label = f'<div class="small">{html.escape(str(item["label"]))}</div>' if item.get("label") else ""
        return label + choices
    if kind == "Input.Text":
        return f'<div class="box">{html.escape(str(item.get("placeholder", "")))}</div>'
    return ""


def card_to_html(card: dict[str, Any], *, bot: str = "handraise", time: str = "10:04") -> str:
    """A self-contained page showing `card` as Teams shows a bot's post in a channel."""
    body = "".join(_element(item) for item in card.get("body", []))
    actions = "".join(
        f'<span class="action{" positive" if action.get("style") == "positive" else ""}">'
        f"{html.escape(str(action.get('title', '')))}</span>"
        for action in card.get("actions", [])
    )
    buttons = f'<div class="actions">{actions}</div>' if actions else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
        f'<div id="message"><div class="avatar">h</div><div><div class="who"><b>{html.escape(bot)}</b> {time}</div>'
        f'<div class="card">{body}{buttons}</div></div></div></body></html>'
    )


def render_png(pairs: Sequence[tuple[dict[str, Any], Path]]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": VIEWPORT_WIDTH, "height": 300}, device_scale_factor=2)
            for card, target in pairs:
                page.set_content(card_to_html(card), wait_until="load")
                box = page.locator("#message").bounding_box()
                assert box is not None, "the card did not render"
                page.screenshot(path=str(target), full_page=True, clip=box, animations="disabled")
                print(f"-> {target}")
        finally:
            browser.close()


def main() -> None:
    built = cards()
    for name, card in built.items():
        (DOCS / name).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote docs/{name}")
    render_png([(built[name], DOCS / image) for name, image in IMAGES.items()])


if __name__ == "__main__":
    main()
