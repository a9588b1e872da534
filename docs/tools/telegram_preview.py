"""Render handraise's Telegram messages as a Telegram-like HTML page, and screenshot them for the README.

The payloads are real: `payloads()` builds the sendMessage / editMessageText arguments with the channel's own
renderer and keyboard (`bot.telegram.render`, `bot.telegram.transport.keyboard`) for a sample plan review, and
docs/telegram-preview-*.json hold them (a test checks they are still what the channel sends).

`message_to_html` is pure: a payload in, a self-contained page out (no scripts, no external resources). It draws
the part of Telegram's HTML that handraise uses (b, i, u, s, code, pre, blockquote, a) and the inline keyboard; any
other tag shows as text, and every piece of text is escaped, so nothing from the message reaches the page raw.

    uv run python docs/tools/telegram_preview.py     # writes the JSON payloads and docs/telegram-*.png
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
IMAGES = {
    "telegram-preview-plan-review.json": "telegram-message.png",
    "telegram-preview-answered.json": "telegram-answered.png",
}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
VIEWPORT_WIDTH = 460

ALLOWED = {"b": "b", "strong": "b", "i": "i", "em": "i", "u": "u", "s": "s", "code": "code", "pre": "pre"}


# --- the real payloads ------------------------------------------------------------------------------------------------


def payloads() -> dict[str, dict[str, Any]]:
    """The plan review as the channel sends it, and the same message once Alice approved it (by file name)."""
    root = str(DOCS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from bot.store.records import AgentRef, QuestionRecord
    from bot.telegram.render import render_outcome, render_question
    from bot.telegram.transport import keyboard
    from core import (
        AskUserQuestionAnswer,
        AskUserQuestionAnswerItem,
        AskUserQuestionIntent,
        AskUserQuestionItem,
        AskUserQuestionOption,
    )

    question = AskUserQuestionItem(
        id="plan",
        header="Database migration",
        question="Approve the plan for tonight's orders-table migration?",
        detail=(
            "1. Snapshot the orders database (about 4 minutes)\n"
            "2. Add the column `shipped_at` with a default of NULL\n"
            "3. Backfill it in batches of 10,000 rows\n"
            "4. Switch the API to read it, behind the flag `orders.shipped_at`"
        ),
        options=[AskUserQuestionOption(label="Approve"), AskUserQuestionOption(label="Request changes")],
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )
    asked = QuestionRecord(agent=AgentRef(id="release-7", name="release-bot"), questions=[question])
    message = render_question(asked)
    answered = asked.model_copy(
        update={
            "status": "answered",
            "answer": AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="plan", selected=["Approve"])]),
            "answered_by": "111111111",
            "answered_via": "telegram",
            "resolved_at": datetime(2026, 12, 3, 9, 14, tzinfo=UTC),
        }
    )
    outcome = render_outcome(answered, {"111111111": "Alice Martin"})
    return {
        "telegram-preview-plan-review.json": {
            "chat_id": -1001234567890,
            "text": message.text,
            "parse_mode": "HTML",
            "reply_markup": keyboard(message.keyboard).to_dict(),
        },
        "telegram-preview-answered.json": {
            "chat_id": -1001234567890,
            "message_id": 42,
            "text": outcome.text,
            "parse_mode": "HTML",
        },
    }


# --- Telegram HTML to a page ------------------------------------------------------------------------------------------


class _TelegramHtml(HTMLParser):
    """Telegram's HTML subset, re-emitted tag by tag from an allow-list; everything else becomes escaped text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ALLOWED:
            self.out.append(f"<{ALLOWED[tag]}>")
            self.open.append(ALLOWED[tag])
        elif tag == "blockquote":
            expandable = any(name == "expandable" for name, _ in attrs)
            self.out.append(f'<blockquote class="{"expandable" if expandable else "quote"}">')
            self.open.append("blockquote")
        elif tag == "a":
            self.out.append('<span class="link">')
            self.open.append("span")
        else:
            self.out.append(html.escape(self.get_starttag_text() or f"<{tag}>"))

    def handle_endtag(self, tag: str) -> None:
        wanted = {"a": "span"}.get(tag, ALLOWED.get(tag, tag))
        if self.open and self.open[-1] == wanted:
            self.out.append(f"</{self.open.pop()}>")
        else:
            self.out.append(html.escape(f"</{tag}>"))

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data).replace("\n", "<br>"))

    def close(self) -> None:
        super().close()
        while self.open:
            self.out.append(f"</{self.open.pop()}>")


def telegram_html_to_html(text: str) -> str:
    parser = _TelegramHtml()
    parser.feed(text)
    parser.close()
    # Telegram draws a quote as a block of its own: the line breaks around it are not extra blank lines.
    return "".join(parser.out).replace("<br><blockquote", "<blockquote").replace("</blockquote><br>", "</blockquote>")


def _keyboard(markup: object) -> str:
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list):
        return ""
    drawn = []
    for row in rows:
        buttons = "".join(
            f'<div class="button">{html.escape(str(button.get("text", "")))}</div>'
            for button in (row if isinstance(row, list) else [])
            if isinstance(button, dict)
        )
        drawn.append(f'<div class="row">{buttons}</div>')
    return f'<div class="keyboard">{"".join(drawn)}</div>'


STYLE = """
* { box-sizing: border-box; }
body { margin: 0; background: #8fb27f; font: 15px/1.4 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
#message { width: 440px; padding: 14px 12px 14px 12px; background: linear-gradient(160deg, #a7c691, #7fa86f); }
.head { display: flex; align-items: center; gap: 8px; margin-bottom: 6px; color: #fff; font-weight: 600; }
.avatar { width: 30px; height: 30px; border-radius: 50%; background: #5b9bd5; display: grid; place-items: center; }
.bubble { background: #fff; border-radius: 12px 12px 12px 4px; padding: 8px 10px 6px; color: #000;
  box-shadow: 0 1px 1px rgba(0,0,0,.15); overflow-wrap: anywhere; }
.sender { color: #3a8bd1; font-weight: 600; font-size: 14px; margin-bottom: 2px; }
.time { text-align: right; color: #8e9ba7; font-size: 12px; margin-top: 2px; }
blockquote { margin: 4px 0; padding: 2px 8px; border-left: 3px solid #3a8bd1; background: #eef5fc;
  border-radius: 4px; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 13px; background: #f1f1f1; border-radius: 3px; }
.link { color: #2a7bc7; }
.keyboard { margin-top: 4px; }
.row { display: flex; gap: 4px; margin-top: 4px; }
.button { flex: 1; text-align: center; color: #fff; background: rgba(60, 90, 50, .45); border-radius: 8px;
  padding: 9px 6px; font-weight: 600; font-size: 14px; }
"""


def message_to_html(payload: dict[str, Any], *, bot: str = "handraise", time: str = "09:12") -> str:
    """A sendMessage / editMessageText payload as a Telegram-like page (the message inside `<div id="message">`)."""
    body = telegram_html_to_html(str(payload.get("text", "")))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(bot)} in Telegram</title><style>{STYLE}</style></head>
<body><div id="message">
<div class="head"><div class="avatar">{html.escape(bot[:1].upper())}</div>Releases</div>
<div class="bubble"><div class="sender">{html.escape(bot)}</div><div class="text">{body}</div>\
<div class="time">{html.escape(time)}</div></div>
{_keyboard(payload.get("reply_markup"))}
</div></body></html>
"""


# --- screenshots ---------------------------------------------------------------------------------------------------


def render_png(pairs: Sequence[tuple[dict[str, Any], Path]]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": VIEWPORT_WIDTH, "height": 300}, device_scale_factor=2)
            for payload, target in pairs:
                page.set_content(message_to_html(payload), wait_until="load")
                box = page.locator("#message").bounding_box()
                assert box is not None, "the message did not render"
                page.screenshot(path=str(target), full_page=True, clip=box, animations="disabled")
                print(f"-> {target}")
        finally:
            browser.close()


def main() -> None:
    built = payloads()
    for name, payload in built.items():
        (DOCS / name).write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    render_png([(built[name], DOCS / image) for name, image in IMAGES.items()])


if __name__ == "__main__":
    main()
