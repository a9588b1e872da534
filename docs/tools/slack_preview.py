"""Render handraise's Block Kit messages as a Slack-like HTML page, and screenshot them for the README.

`blocks_to_html` is pure: Block Kit JSON in, a self-contained HTML page out (no scripts, no external resources).
It draws the block types handraise posts — header, section (text, fields, accessory), context, divider, actions
(buttons, radio buttons, checkboxes, selects shown closed), input — with a minimal mrkdwn converter. Every piece of
text is HTML-escaped; nothing from the message reaches the page raw. Anything else shows a visible "unsupported"
placeholder, which the tests look for.

`main()` renders docs/slack-preview-plan-review.json to docs/slack-message.png, docs/slack-preview-answered.json
to docs/slack-answered.png and docs/slack-preview-permission.json to docs/slack-permission.png with Playwright
driving Debian's chromium (tests/slack/test_snapshots.py keeps the JSON equal to what the code renders; after a
change, `HANDRAISE_UPDATE_SNAPSHOTS=1 uv run pytest tests/slack/test_snapshots.py`, then this):

    uv run python docs/tools/slack_preview.py                 # all three docs images
    uv run python docs/tools/slack_preview.py IN.json OUT.png # any other message (OUT.html writes the page instead)
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
IMAGES = {
    "slack-preview-plan-review.json": "slack-message.png",
    "slack-preview-answered.json": "slack-answered.png",
    "slack-preview-permission.json": "slack-permission.png",
}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT_WIDTH = 720

UNSUPPORTED = "unsupported"
"""The class (and word) of the placeholder drawn for a block or element this renderer does not know."""


# --- escaping and mrkdwn ----------------------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


_SLACK_ENTITY = re.compile(r"&(amp|lt|gt);")
_ENTITY_CHAR = {"amp": "&", "lt": "<", "gt": ">"}


def _unslack(text: str) -> str:
    """Slack's own escaping undone (`&amp;` `&lt;` `&gt;` only), in one pass so `&amp;lt;` stays the text `&lt;`."""
    return _SLACK_ENTITY.sub(lambda match: _ENTITY_CHAR[match.group(1)], text)


def _text(text: str) -> str:
    """Literal mrkdwn text as HTML: Slack's entities read as the characters they stand for, then escaped again."""
    return _esc(_unslack(text))


def _emoji_svg(body: str) -> str:
    return f'<svg class="emoji" viewBox="0 0 22 22" aria-hidden="true">{body}</svg>'


EMOJI: dict[str, str] = {
    "white_check_mark": _emoji_svg(
        '<rect x="1" y="1" width="20" height="20" rx="4" fill="#3fb34f"/>'
        '<path d="M5.6 11.4l3.6 3.6 7.2-8" fill="none" stroke="#fff" stroke-width="2.6" stroke-linecap="round"'
        ' stroke-linejoin="round"/>'
    ),
    "heavy_check_mark": _emoji_svg(
        '<path d="M4 11.5l4.5 4.5 9.5-10" fill="none" stroke="#1d1c1d" stroke-width="3" stroke-linecap="round"'
        ' stroke-linejoin="round"/>'
    ),
    "x": _emoji_svg('<path d="M5 5l12 12M17 5L5 17" stroke="#dd2e44" stroke-width="3.4" stroke-linecap="round"/>'),
    "no_entry_sign": _emoji_svg(
        '<circle cx="11" cy="11" r="8.6" fill="#fff" stroke="#dd2e44" stroke-width="2.6"/>'
        '<path d="M5 5l12 12" stroke="#dd2e44" stroke-width="2.6"/>'
    ),
    "hourglass": _emoji_svg(
        '<rect x="4" y="1.5" width="14" height="2.4" rx="1" fill="#a0581c"/>'
        '<rect x="4" y="18.1" width="14" height="2.4" rx="1" fill="#a0581c"/>'
        '<path d="M6 4h10c0 4-3.2 5.4-3.2 7S16 14 16 18H6c0-4 3.2-5.4 3.2-7S6 8 6 4z" fill="#e1f1fb"'
        ' stroke="#8fa7b8" stroke-width=".8"/>'
        '<path d="M8.4 16.6c1.2-1.6 1.9-2.2 2.6-2.2s1.4.6 2.6 2.2z" fill="#f4ac3c"/>'
    ),
    "warning": _emoji_svg(
        '<path d="M11 2.2L20.6 19H1.4z" fill="#ffcc4d" stroke="#e5a50a" stroke-width="1" stroke-linejoin="round"/>'
        '<path d="M11 8v5.4" stroke="#1d1c1d" stroke-width="2.2" stroke-linecap="round"/>'
        '<circle cx="11" cy="16.2" r="1.2" fill="#1d1c1d"/>'
    ),
    "speech_balloon": _emoji_svg(
        '<path d="M3 4.5h16a1.5 1.5 0 011.5 1.5v8.5a1.5 1.5 0 01-1.5 1.5H9l-4.5 3.5V16H3a1.5 1.5 0 01-1.5-1.5V6'
        'A1.5 1.5 0 013 4.5z" fill="#fff" stroke="#99aab5" stroke-width="1.2" stroke-linejoin="round"/>'
    ),
}
"""The few emoji handraise writes, drawn inline so the picture needs no emoji font; other shortcodes stay text."""

_EMOJI = "|".join(re.escape(name) for name in sorted(EMOJI, key=len, reverse=True))
_EMOJI_ONLY = re.compile(rf":(?P<emoji>{_EMOJI}):")

_INLINE = re.compile(
    r"`(?P<code>[^`\n]+)`"
    r"|<(?P<angle>[^<>\n]+)>"
    rf"|:(?P<emoji>{_EMOJI}):"
    r"|(?<![\w*])\*(?=\S)(?P<bold>[^*\n]*?\S)\*(?![\w*])"
    r"|(?<![\w_])_(?=\S)(?P<italic>[^_\n]*?\S)_(?![\w_])"
    r"|(?<![\w~])~(?=\S)(?P<strike>[^~\n]*?\S)~(?![\w~])"
)
_LINK = re.compile(r"(?:https?://|mailto:)[^\s|\"'<>]+", re.IGNORECASE)
_NAMEISH = re.compile(r"[UWSC][0-9]*(?P<name>[A-Z][A-Z_-]*)")
_DATE_TOKEN = re.compile(r"\{(\w+)\}")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

Names = Mapping[str, str]


def _nameish(ident: str, names: Names) -> str:
    """A readable name for a Slack id: from `names`, else `U0ALICE` → `alice`, else the id itself."""
    if ident in names:
        return names[ident]
    match = _NAMEISH.fullmatch(ident)
    return match.group("name").lower() if match else ident


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _date_part(token: str, moment: datetime) -> str | None:
    """One `{token}` of a `<!date^…>` in UTC (Slack uses the reader's zone; the picture has no reader)."""
    month, day, year = _MONTHS[moment.month - 1], moment.day, moment.year
    hour = moment.hour % 12 or 12
    meridiem = "AM" if moment.hour < 12 else "PM"
    parts = {
        "date_num": f"{moment:%Y-%m-%d}",
        "date": f"{month} {_ordinal(day)}, {year}",
        "date_short": f"{month[:3]} {day}, {year}",
        "date_long": f"{_WEEKDAYS[moment.weekday()]}, {month} {_ordinal(day)}, {year}",
        "time": f"{hour}:{moment:%M} {meridiem}",
        "time_secs": f"{hour}:{moment:%M:%S} {meridiem}",
    }
    return parts.get(token.removesuffix("_pretty"))


def _date(spec: str, fallback: str) -> str:
    """`!date^<unix>^<format>[^<link>]` as text, or the fallback when any part is not understood."""
    pieces = spec.split("^")
    if len(pieces) < 3 or not pieces[1].isdigit():
        return fallback
    moment = datetime.fromtimestamp(int(pieces[1]), tz=UTC)
    failed = False

    def part(match: re.Match[str]) -> str:
        nonlocal failed
        shown = _date_part(match.group(1), moment)
        failed = failed or shown is None
        return shown or ""

    shown = _DATE_TOKEN.sub(part, pieces[2])
    return fallback if failed else shown


def _angle(token: str, names: Names) -> str:
    """A `<…>` token: mention, channel, special mention, date or link; anything else is shown as literal text."""
    target, _, label = token.partition("|")
    mention = '<span class="mention">{}</span>'
    if re.fullmatch(r"@[UW][A-Z0-9]+", target):
        return mention.format(_text("@" + (label or _nameish(target[1:], names))))
    if re.fullmatch(r"#C[A-Z0-9]+", target):
        return mention.format(_text("#" + (label or _nameish(target[1:], names))))
    if match := re.fullmatch(r"!subteam\^(S[A-Z0-9]+)", target):
        return mention.format(_text(label or "@" + _nameish(match.group(1), names)))
    if target in ("!here", "!channel", "!everyone"):
        return '<span class="mention broadcast">{}</span>'.format(_text(label or "@" + target[1:]))
    if target.startswith("!date^"):
        return _text(_date(target, label))
    if _LINK.fullmatch(_unslack(target)):
        href = _unslack(target)
        return f'<a href="{_esc(href)}">{_text(label or target)}</a>'
    return _text(f"<{token}>")


def _inline(text: str, names: Names) -> str:
    """One stretch of mrkdwn with no code blocks or line breaks in it, as HTML."""
    out: list[str] = []
    at = 0
    for match in _INLINE.finditer(text):
        out.append(_text(text[at : match.start()]))
        at = match.end()
        kind = match.lastgroup
        inner = match.group(kind) if kind else ""
        if kind == "code":
            out.append(f'<code class="inline">{_text(inner)}</code>')
        elif kind == "angle":
            out.append(_angle(inner, names))
        elif kind == "emoji":
            out.append(EMOJI[inner])
        elif kind == "bold":
            out.append(f"<b>{_inline(inner, names)}</b>")
        elif kind == "italic":
            out.append(f"<i>{_inline(inner, names)}</i>")
        else:
            out.append(f"<s>{_inline(inner, names)}</s>")
    out.append(_text(text[at:]))
    return "".join(out)


PARAGRAPH_BREAK = '<span class="paragraph-break"></span>'


def _paragraphs(lines: Sequence[str], names: Names) -> str:
    """Lines joined with `<br>`; a run of blank lines is one short paragraph gap, as Slack draws it."""
    out: list[str] = []
    gap = False
    for line in lines:
        if not line.strip():
            gap = True
            continue
        if out:
            out.append(PARAGRAPH_BREAK if gap else "<br>")
        gap = False
        out.append(_inline(line, names))
    return "".join(out)


def _lines(text: str, names: Names) -> str:
    """Lines of mrkdwn: `>` quotes grouped into a block quote, the other lines joined with `<br>`."""
    out: list[str] = []
    quoted: list[str] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            out.append(_paragraphs(plain, names))
            plain.clear()
        if quoted:
            out.append(f"<blockquote>{'<br>'.join(_inline(line, names) for line in quoted)}</blockquote>")
            quoted.clear()

    for line in text.split("\n"):
        quote = re.match(r"(?:>|&gt;) ?", line)
        if (quote is not None) != bool(quoted):
            flush()
        (quoted if quote else plain).append(line[quote.end() :] if quote else line)
    flush()
    return "".join(out)


def mrkdwn_to_html(text: str, names: Names | None = None) -> str:
    """Slack mrkdwn as HTML: *bold*, _italic_, ~strike~, `code`, ```blocks```, > quotes, <links|and> <@mentions>."""
    names = names or {}
    out: list[str] = []
    pieces = re.split(r"```(.*?)```", text, flags=re.DOTALL)
    for index, piece in enumerate(pieces):
        if index % 2:
            body = piece.removeprefix("\n").removesuffix("\n")
            out.append(f'<pre class="code">{_text(body)}</pre>')
            continue
        if index > 0:
            piece = piece.removeprefix("\n")
        if index < len(pieces) - 1:
            piece = piece.removesuffix("\n")
        if piece:
            out.append(_lines(piece, names))
    return "".join(out)


def plain_to_html(obj: Mapping[str, Any]) -> str:
    """A plain_text object as HTML: escaped, line breaks kept, emoji shortcodes drawn when `emoji` is on."""
    escaped = _esc(str(obj.get("text", "")))
    if obj.get("emoji", True):
        escaped = _EMOJI_ONLY.sub(lambda match: EMOJI[match.group("emoji")], escaped)
    return escaped.replace("\n", "<br>")


def text_to_html(obj: Any, names: Names | None = None) -> str:
    """A Block Kit text object (mrkdwn or plain_text) as HTML."""
    if not isinstance(obj, Mapping):
        return ""
    text: Mapping[str, Any] = obj
    if text.get("type") == "mrkdwn":
        return mrkdwn_to_html(str(text.get("text", "")), names)
    return plain_to_html(text)


# --- elements ---------------------------------------------------------------------------------------------------------


def _unsupported(kind: object) -> str:
    return f'<div class="{UNSUPPORTED}">This content can\u2019t be displayed ({UNSUPPORTED}: {_esc(str(kind))})</div>'


CHEVRON = (
    '<svg class="chevron" viewBox="0 0 20 20" aria-hidden="true"><path d="M5.5 8l4.5 4.5L14.5 8" fill="none"'
    ' stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"/></svg>'
)
TICK = (
    '<svg viewBox="0 0 16 16" aria-hidden="true"><path d="M4 8.2l2.6 2.6L12 5.4" fill="none" stroke="#fff"'
    ' stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>'
)


def _button(element: Mapping[str, Any], names: Names) -> str:
    style = element.get("style")
    css = "button" + (f" {style}" if style in ("primary", "danger") else "")
    return f'<span class="{css}">{text_to_html(element.get("text"), names)}</span>'


def _option(option: Mapping[str, Any], names: Names) -> str:
    label = f'<span class="option-text">{text_to_html(option.get("text"), names)}</span>'
    if "description" in option:
        label += f'<span class="option-description">{text_to_html(option["description"], names)}</span>'
    return f'<span class="option-label">{label}</span>'


def _choices(element: Mapping[str, Any], names: Names) -> str:
    """radio_buttons or checkboxes: every option with its mark, the initial ones marked."""
    radio = element.get("type") == "radio_buttons"
    initial = [element["initial_option"]] if radio and "initial_option" in element else []
    initial += [] if radio else list(element.get("initial_options", []))
    chosen = {option.get("value") for option in initial}
    rows: list[str] = []
    for option in element.get("options", []):
        on = option.get("value") in chosen
        mark = f'<span class="{"radio" if radio else "checkbox"}{" on" if on else ""}">{"" if radio else TICK}</span>'
        rows.append(f'<div class="choice">{mark}{_option(option, names)}</div>')
    return f'<div class="choices">{"".join(rows)}</div>'


def _select(element: Mapping[str, Any], names: Names) -> str:
    """A select menu as Slack shows it closed: the chosen option(s), else the placeholder, and a chevron."""
    multi = element.get("type", "").startswith("multi_")
    if multi:
        chosen = [
            f'<span class="token">{text_to_html(o.get("text"), names)}</span>'
            for o in element.get("initial_options", [])
        ]
    else:
        initial = element.get("initial_option")
        chosen = [text_to_html(initial.get("text"), names)] if isinstance(initial, Mapping) else []
    if chosen:
        shown = f'<span class="value">{"".join(chosen)}</span>'
    else:
        placeholder = element.get("placeholder") or {"type": "plain_text", "text": "Select an item"}
        shown = f'<span class="placeholder">{text_to_html(placeholder, names)}</span>'
    return f'<span class="select{" multi" if multi else ""}">{shown}{CHEVRON}</span>'


def _text_input(element: Mapping[str, Any], names: Names) -> str:
    value = element.get("initial_value")
    if value:
        shown = f'<span class="value">{_esc(str(value)).replace(chr(10), "<br>")}</span>'
    else:
        shown = f'<span class="placeholder">{text_to_html(element.get("placeholder"), names)}</span>'
    return f'<div class="text-input{" multiline" if element.get("multiline") else ""}">{shown}</div>'


def _overflow(element: Mapping[str, Any], names: Names) -> str:
    return '<span class="button overflow" aria-label="More actions">\u22ee</span>'


def _datepicker(element: Mapping[str, Any], names: Names) -> str:
    initial = element.get("initial_date")
    shown = _esc(str(initial)) if initial else text_to_html(element.get("placeholder") or {"text": "Select a date"})
    return f'<span class="select"><span class="{"value" if initial else "placeholder"}">{shown}</span>{CHEVRON}</span>'


ELEMENTS: dict[str, Callable[[Mapping[str, Any], Names], str]] = {
    "button": _button,
    "radio_buttons": _choices,
    "checkboxes": _choices,
    "static_select": _select,
    "multi_static_select": _select,
    "external_select": _select,
    "multi_external_select": _select,
    "users_select": _select,
    "multi_users_select": _select,
    "conversations_select": _select,
    "multi_conversations_select": _select,
    "channels_select": _select,
    "multi_channels_select": _select,
    "plain_text_input": _text_input,
    "overflow": _overflow,
    "datepicker": _datepicker,
}


def element_to_html(element: Any, names: Names | None = None) -> str:
    """One interactive element (button, choices, select, text input…), or the unsupported placeholder."""
    if not isinstance(element, Mapping):
        return _unsupported(type(element).__name__)
    kind = element.get("type")
    render = ELEMENTS.get(kind) if isinstance(kind, str) else None
    return render(element, names or {}) if render else _unsupported(kind)


# --- blocks -----------------------------------------------------------------------------------------------------------


def _header(block: Mapping[str, Any], names: Names) -> str:
    return f'<div class="block header">{text_to_html(block.get("text"), names)}</div>'


def _section(block: Mapping[str, Any], names: Names) -> str:
    body = ""
    if "text" in block:
        body += f'<div class="section-text">{text_to_html(block["text"], names)}</div>'
    if fields := block.get("fields"):
        cells = "".join(f'<div class="field">{text_to_html(field, names)}</div>' for field in fields)
        body += f'<div class="fields">{cells}</div>'
    accessory = block.get("accessory")
    if accessory is None:
        return f'<div class="block section">{body}</div>'
    return (
        f'<div class="block section with-accessory"><div class="section-body">{body}</div>'
        f'<div class="accessory">{element_to_html(accessory, names)}</div></div>'
    )


def _context(block: Mapping[str, Any], names: Names) -> str:
    parts: list[str] = []
    for element in block.get("elements", []):
        if isinstance(element, Mapping) and element.get("type") in ("mrkdwn", "plain_text"):
            parts.append(f'<span class="context-item">{text_to_html(element, names)}</span>')
        else:
            kind = element.get("type") if isinstance(element, Mapping) else type(element).__name__
            parts.append(_unsupported(kind))
    return f'<div class="block context">{"".join(parts)}</div>'


def _divider(block: Mapping[str, Any], names: Names) -> str:
    return '<hr class="block divider">'


def _actions(block: Mapping[str, Any], names: Names) -> str:
    items = "".join(f'<div class="action">{element_to_html(e, names)}</div>' for e in block.get("elements", []))
    return f'<div class="block actions">{items}</div>'


def _input(block: Mapping[str, Any], names: Names) -> str:
    optional = ' <span class="optional">(optional)</span>' if block.get("optional") else ""
    label = f'<div class="input-label">{text_to_html(block.get("label"), names)}{optional}</div>'
    hint = f'<div class="hint">{text_to_html(block["hint"], names)}</div>' if "hint" in block else ""
    return f'<div class="block input">{label}{element_to_html(block.get("element"), names)}{hint}</div>'


BLOCKS: dict[str, Callable[[Mapping[str, Any], Names], str]] = {
    "header": _header,
    "section": _section,
    "context": _context,
    "divider": _divider,
    "actions": _actions,
    "input": _input,
}


def block_to_html(block: Any, names: Names | None = None) -> str:
    """One block as HTML, or the unsupported placeholder."""
    if not isinstance(block, Mapping):
        return _unsupported(type(block).__name__)
    kind = block.get("type")
    render = BLOCKS.get(kind) if isinstance(kind, str) else None
    return render(block, names or {}) if render else _unsupported(kind)


# --- the page ---------------------------------------------------------------------------------------------------------

STYLE = """
* { box-sizing: border-box; }
html, body { margin: 0; background: #fff; }
body {
  font-family: Slack-Lato, Lato, "Helvetica Neue", Helvetica, "Liberation Sans", Arial, sans-serif;
  font-size: 15px; line-height: 1.46668; color: #1d1c1d;
  -webkit-font-smoothing: antialiased; font-variant-ligatures: common-ligatures;
}
#message { width: 100%; padding-bottom: 12px; background: #fff; }
.pane-head {
  display: flex; align-items: baseline; gap: 8px; height: 49px; padding: 12px 16px 0 20px;
  border-bottom: 1px solid rgba(29, 28, 29, 0.13);
}
.pane-title { font-size: 18px; font-weight: 900; line-height: 1.33; }
.pane-channel { font-size: 13px; color: #616061; }
.pane-close { margin-left: auto; color: #616061; font-size: 20px; line-height: 1; }
.msg { display: flex; gap: 8px; padding: 14px 20px 4px; }
.avatar {
  flex: none; width: 36px; height: 36px; margin-top: 4px; border-radius: 6px;
  background: #4a154b; color: #fff; font-weight: 900; font-size: 20px; line-height: 36px; text-align: center;
}
.content { flex: 1; min-width: 0; }
.meta { display: flex; align-items: baseline; gap: 4px; line-height: 1.46668; }
.name { font-weight: 900; }
.badge {
  position: relative; top: -1px; padding: 1px 3px; border-radius: 2px; background: rgba(29, 28, 29, 0.13);
  color: rgba(29, 28, 29, 0.7); font-size: 10px; font-weight: 700; line-height: 1.25; letter-spacing: 0.2px;
}
.time { margin-left: 2px; font-size: 12px; color: #616061; }
.edited { font-size: 13px; color: #616061; }
.blocks { padding-top: 2px; }
.block { margin: 0; padding: 4px 0; overflow-wrap: anywhere; }
.block:first-child { padding-top: 0; }
.header { padding: 4px 0; font-size: 18px; font-weight: 900; line-height: 1.33334; }
b { font-weight: 700; }
a { color: #1264a3; text-decoration: none; }
.mention {
  padding: 0 2px 1px; border-radius: 3px; background: rgba(29, 155, 209, 0.1); color: #1264a3;
}
.broadcast { background: rgba(242, 199, 68, 0.4); color: #1d1c1d; }
code.inline {
  padding: 2px 3px 1px; border: 1px solid rgba(29, 28, 29, 0.13); border-radius: 3px;
  background: rgba(29, 28, 29, 0.04); color: #c01343;
  font-family: Monaco, Menlo, Consolas, "Courier New", "DejaVu Sans Mono", monospace; font-size: 12px;
  font-variant-ligatures: none;
}
pre.code {
  margin: 4px 0; padding: 8px; border: 1px solid rgba(29, 28, 29, 0.13); border-radius: 4px;
  background: rgba(29, 28, 29, 0.04); white-space: pre-wrap; overflow-wrap: anywhere;
  font-family: Monaco, Menlo, Consolas, "Courier New", "DejaVu Sans Mono", monospace; font-size: 12px; line-height: 1.5;
}
.paragraph-break { display: block; height: 8px; }
blockquote { margin: 0; padding-left: 16px; position: relative; }
blockquote::before {
  content: ""; position: absolute; left: 0; top: 0; bottom: 0; width: 4px; border-radius: 8px; background: #dddddd;
}
svg.emoji { width: 22px; height: 22px; margin: -3px 1px 0; vertical-align: middle; }
.with-accessory { display: flex; gap: 16px; align-items: flex-start; }
.section-body { flex: 1; min-width: 0; }
.accessory { flex: none; max-width: 50%; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; margin-top: 4px; }
.section-text + .fields { margin-top: 8px; }
.context {
  display: flex; flex-wrap: wrap; align-items: center; gap: 2px 12px; padding-top: 6px;
  font-size: 13px; line-height: 1.38463; color: #616061;
}
.context b { color: #616061; }
.context code.inline { font-size: 11px; }
.divider { height: 0; margin: 8px 0; padding: 0; border: 0; border-top: 1px solid rgba(29, 28, 29, 0.13); }
.actions { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 8px; padding: 8px 0 6px; }
.button {
  display: inline-flex; align-items: center; height: 28px; min-width: 56px; padding: 0 12px;
  border: 1px solid rgba(29, 28, 29, 0.3); border-radius: 4px; background: #fff; color: #1d1c1d;
  font-size: 13px; font-weight: 700; line-height: 1; white-space: nowrap; justify-content: center;
  box-shadow: 0 1px 3px rgba(0, 0, 0, 0.08);
}
.button.primary { border-color: #007a5a; background: #007a5a; color: #fff; box-shadow: none; }
.button.danger { border-color: #e01e5a; background: #e01e5a; color: #fff; box-shadow: none; }
.button.overflow { min-width: 0; width: 28px; padding: 0; font-size: 16px; }
.choices { display: flex; flex-direction: column; gap: 6px; padding: 2px 0; }
.choice { display: flex; align-items: flex-start; gap: 8px; }
.radio, .checkbox {
  flex: none; display: inline-flex; align-items: center; justify-content: center;
  width: 16px; height: 16px; margin-top: 3px; border: 1px solid rgba(29, 28, 29, 0.5); background: #fff;
}
.radio { border-radius: 50%; }
.radio.on { border: 5px solid #1264a3; }
.checkbox { border-radius: 4px; }
.checkbox svg { width: 16px; height: 16px; visibility: hidden; }
.checkbox.on { border-color: #1264a3; background: #1264a3; }
.checkbox.on svg { visibility: visible; }
.option-label { display: flex; flex-direction: column; }
.option-description { font-size: 13px; color: #616061; }
.select {
  display: inline-flex; align-items: center; justify-content: space-between; gap: 8px;
  min-width: 200px; max-width: 100%; height: 28px; padding: 0 6px 0 12px;
  border: 1px solid rgba(29, 28, 29, 0.3); border-radius: 4px; background: #fff;
  font-size: 13px; font-weight: 700; box-shadow: 0 1px 3px rgba(0, 0, 0, 0.08);
}
.select.multi {
  min-width: 300px; min-height: 36px; height: auto; padding: 4px 6px 4px 12px;
  font-size: 15px; font-weight: 400; box-shadow: none;
}
.select .placeholder { color: #616061; font-weight: inherit; }
.select.multi .placeholder { color: rgba(29, 28, 29, 0.5); }
.select .value { display: flex; flex-wrap: wrap; gap: 4px; }
.token { padding: 0 6px; border-radius: 4px; background: rgba(29, 28, 29, 0.06); font-size: 13px; }
.chevron { flex: none; width: 18px; height: 18px; color: #616061; }
.input { padding: 6px 0 8px; }
.input-label { margin-bottom: 8px; font-weight: 700; }
.optional { color: #616061; font-weight: 400; }
.hint { margin-top: 6px; font-size: 13px; color: #616061; }
.text-input {
  min-height: 36px; padding: 7px 12px; border: 1px solid rgba(29, 28, 29, 0.3); border-radius: 4px;
}
.text-input.multiline { min-height: 80px; }
.text-input .placeholder { color: rgba(29, 28, 29, 0.5); }
.unsupported {
  padding: 6px 10px; border: 1px dashed rgba(29, 28, 29, 0.3); border-radius: 4px;
  color: #616061; font-size: 13px; font-style: italic;
}
"""


def blocks_to_html(
    message: dict[str, Any],
    *,
    app_name: str = "handraise",
    channel: str = "deploys",
    time: str = "9:00 AM",
    names: Names | None = None,
) -> str:
    """`message` (Block Kit: `{"blocks": [...]}`, or just `{"text": ...}`) as a Slack-like HTML page.

    The message is drawn as the app's post in a thread pane (avatar, name, APP badge, time) on white, inside
    `<div id="message">`. Mentions show the name from `names` (Slack id → name), else a name-ish form of the id.
    """
    names = names or {}
    blocks = message.get("blocks")
    if isinstance(blocks, Sequence) and not isinstance(blocks, str) and blocks:
        body = "".join(block_to_html(block, names) for block in blocks)
    else:
        body = f'<div class="block section">{mrkdwn_to_html(str(message.get("text", "")), names)}</div>'
    initial = _esc(app_name[:1].upper())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(app_name)} in Slack</title>
<style>{STYLE}</style>
</head>
<body>
<div id="message">
<div class="pane-head"><span class="pane-title">Thread</span><span class="pane-channel"># {_esc(channel)}</span>\
<span class="pane-close" aria-hidden="true">\u00d7</span></div>
<div class="msg">
<div class="avatar" aria-hidden="true">{initial}</div>
<div class="content">
<div class="meta"><span class="name">{_esc(app_name)}</span><span class="badge">APP</span>\
<span class="time">{_esc(time)}</span></div>
<div class="blocks">{body}</div>
</div>
</div>
</div>
</body>
</html>
"""


# --- screenshots ------------------------------------------------------------------------------------------------------


def render_png(pairs: Sequence[tuple[Path, Path]]) -> None:
    """Each JSON message of `pairs` screenshotted to its PNG (or written as HTML when the target ends in .html)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": VIEWPORT_WIDTH, "height": 400}, device_scale_factor=2)
            for source, target in pairs:
                page_html = blocks_to_html(json.loads(source.read_text(encoding="utf-8")))
                if target.suffix == ".html":
                    target.write_text(page_html, encoding="utf-8")
                    continue
                page.set_content(page_html, wait_until="load")
                page.evaluate("document.fonts.ready.then(() => true)")
                box = page.locator("#message").bounding_box()
                assert box is not None, "the message did not render"
                page.screenshot(path=str(target), full_page=True, clip=box, animations="disabled")
                print(f"{source.name} -> {target}")
        finally:
            browser.close()


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        if len(args) != 2:
            raise SystemExit("usage: slack_preview.py [MESSAGE.json OUT.png|OUT.html]")
        render_png([(Path(args[0]), Path(args[1]))])
        return
    render_png([(DOCS / source, DOCS / target) for source, target in IMAGES.items()])


if __name__ == "__main__":
    main()
