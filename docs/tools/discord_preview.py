"""Render handraise's Discord messages as a Discord-like HTML page, and screenshot them for the docs.

The payloads are real: `payloads()` builds the message bodies with the channel's own renderer (`bot.discord.render`)
for a sample plan review, and docs/discord-preview-*.json hold them (a test checks they are still what the channel
sends).

`message_to_html` is pure: a payload in, a self-contained page out (no scripts, no external resources). It draws the
part of Discord's markdown that handraise writes (`**bold**`, `*italic*`, `> ` quotes, backslash escapes, `<@id>`
mentions, `<t:…:f>` times) and the components (buttons, selects); every piece of text is escaped, so nothing from the
message reaches the page raw.

    uv run python docs/tools/discord_preview.py     # writes the JSON payloads and docs/discord-*.png
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
IMAGES = {
    "discord-preview-plan-review.json": "discord-message.png",
    "discord-preview-answered.json": "discord-answered.png",
}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
VIEWPORT_WIDTH = 560
ALICE = "80351110224678912"
NAMES = {ALICE: "Alice Martin"}


# --- the real payloads ---------------------------------------------------------------------------------------------


def payloads() -> dict[str, dict[str, Any]]:
    """The plan review as the channel sends it, and the same message once Alice approved it (by file name)."""
    root = str(DOCS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from bot.discord.render import render_outcome, render_question
    from bot.store.records import AgentRef, QuestionRecord
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
            "2. Add the column shipped_at with a default of NULL\n"
            "3. Backfill it in batches of 10,000 rows\n"
            "4. Switch the API to read it, behind the flag orders.shipped_at"
        ),
        options=[AskUserQuestionOption(label="Approve"), AskUserQuestionOption(label="Request changes")],
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )
    asked = QuestionRecord(agent=AgentRef(id="dc-release-7", name="release-bot"), questions=[question])
    answered = asked.model_copy(
        update={
            "status": "answered",
            "answer": AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="plan", selected=["Approve"])]),
            "answered_by": ALICE,
            "answered_via": "discord",
            "resolved_at": datetime(2026, 12, 6, 9, 14, tzinfo=UTC),
        }
    )
    return {
        "discord-preview-plan-review.json": render_question(asked).body(),
        "discord-preview-answered.json": render_outcome(answered).body(),
    }


# --- Discord markdown to a page -------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\\(.)|\*\*(.+?)\*\*|\*(.+?)\*|<@(\d+)>|<@&(\d+)>|<t:(\d+):[a-zA-Z]>", re.DOTALL)


def _inline(text: str, names: Mapping[str, str]) -> str:
    out: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        out.append(html.escape(text[position : match.start()]))
        escaped, bold, italic, user, role, moment = match.groups()
        if escaped is not None:
            out.append(html.escape(escaped))
        elif bold is not None:
            out.append(f"<b>{_inline(bold, names)}</b>")
        elif italic is not None:
            out.append(f"<i>{_inline(italic, names)}</i>")
        elif user is not None:
            out.append(f'<span class="mention">@{html.escape(names.get(user, "unknown-user"))}</span>')
        elif role is not None:
            out.append('<span class="mention">@role</span>')
        elif moment is not None:
            when = datetime.fromtimestamp(int(moment), UTC)
            out.append(f'<span class="time">{when:%d %B %Y %H:%M}</span>')
        position = match.end()
    out.append(html.escape(text[position:]))
    return "".join(out)


def discord_markdown_to_html(text: str, names: Mapping[str, str] | None = None) -> str:
    """Discord's markdown as handraise writes it, drawn as HTML; anything else shows as text."""
    names = names or {}
    blocks: list[str] = []
    quote: list[str] = []
    for line in text.split("\n"):
        if line.startswith("> "):
            quote.append(_inline(line[2:], names))
            continue
        if quote:
            blocks.append(f"<blockquote>{'<br>'.join(quote)}</blockquote>")
            quote = []
        blocks.append(_inline(line, names) + "<br>")
    if quote:
        blocks.append(f"<blockquote>{'<br>'.join(quote)}</blockquote>")
    return "".join(blocks)


_STYLES = {1: "primary", 2: "secondary", 3: "success", 4: "danger"}


def _components(rows: object) -> str:
    if not isinstance(rows, list):
        return ""
    drawn = []
    for row in rows:
        items = row.get("components") if isinstance(row, dict) else None
        cells = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == 3:
                cells.append(f'<div class="select">{html.escape(str(item.get("placeholder", "")))}<span>⌄</span></div>')
            else:
                style = _STYLES.get(item.get("style", 2), "secondary")  # type: ignore[arg-type]
                cells.append(f'<div class="button {style}">{html.escape(str(item.get("label", "")))}</div>')
        drawn.append(f'<div class="row">{"".join(cells)}</div>')
    return "".join(drawn)


STYLE = """
* { box-sizing: border-box; }
body { margin: 0; background: #313338; font: 15px/1.375 "gg sans", "Noto Sans", "DejaVu Sans", sans-serif; }
#message { width: 540px; padding: 12px 16px 14px 16px; background: #313338; color: #dbdee1; display: flex; gap: 14px; }
.avatar { flex: none; width: 40px; height: 40px; border-radius: 50%; background: #5865f2; color: #fff;
  display: grid; place-items: center; font-weight: 700; }
.name { color: #f2f3f5; font-weight: 600; }
.tag { background: #5865f2; color: #fff; font-size: 10px; padding: 1px 4px; border-radius: 3px; margin-left: 4px;
  vertical-align: 2px; }
.stamp { color: #949ba4; font-size: 12px; margin-left: 6px; }
.text { overflow-wrap: anywhere; margin-top: 2px; }
blockquote { margin: 4px 0; padding: 0 0 0 12px; border-left: 4px solid #4e5058; }
.mention { background: rgba(88,101,242,.3); color: #c9cdfb; border-radius: 3px; padding: 0 2px; }
.time { background: rgba(78,80,88,.5); border-radius: 3px; padding: 0 2px; }
.row { display: flex; gap: 8px; margin-top: 8px; }
.button { color: #fff; border-radius: 3px; padding: 6px 16px; font-size: 14px; font-weight: 500; }
.primary { background: #5865f2; } .secondary { background: #4e5058; } .success { background: #248046; }
.danger { background: #da373c; }
.select { width: 100%; background: #1e1f22; color: #949ba4; border-radius: 4px; padding: 9px 10px;
  display: flex; justify-content: space-between; }
"""


def message_to_html(payload: dict[str, Any], *, bot: str = "handraise", stamp: str = "Today at 09:12") -> str:
    """A message body as a Discord-like page (the message inside `<div id="message">`)."""
    body = discord_markdown_to_html(str(payload.get("content", "")), NAMES)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(bot)} in Discord</title><style>{STYLE}</style></head>
<body><div id="message"><div class="avatar">{html.escape(bot[:1].upper())}</div><div>
<div><span class="name">{html.escape(bot)}</span><span class="tag">APP</span><span class="stamp">{stamp}</span></div>
<div class="text">{body}</div>{_components(payload.get("components"))}
</div></div></body></html>
"""


# --- screenshots ----------------------------------------------------------------------------------------------------


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
