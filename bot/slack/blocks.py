"""Block Kit's limits and the text primitives every Slack surface is built from: escaping, clipping, splitting.

Lengths are counted in UTF-16 code units, never fewer than Slack's own count, so an agent's emoji-heavy label is
clipped rather than rejected by the API. Agent text is escaped (`&`, `<`, `>`) before it goes into any mrkdwn field,
so it cannot mention anyone, ping a channel or hide a link; plain_text fields are not parsed by Slack and are not
escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

Block = dict[str, Any]

MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_ID = 255
MAX_OPTION_TEXT = 75
MAX_OPTION_DESCRIPTION = 75
MAX_RADIO_OPTIONS = 10
MAX_CHECKBOX_OPTIONS = 10
MAX_SELECT_OPTIONS = 100
MAX_BUTTONS = 5
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ELEMENTS = 10
MAX_FALLBACK_TEXT = 3000
MAX_MODAL_TITLE = 24
MAX_MODAL_BUTTON = 24
MAX_INPUT_LABEL = 2000
MAX_PLACEHOLDER = 150
MAX_TEXT_INPUT = 3000

ELLIPSIS = "…"


def units(text: str) -> int:
    """Length as Slack may count it: UTF-16 code units (an emoji outside the BMP counts twice)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def escape(text: str) -> str:
    """Escape the three characters mrkdwn treats as control syntax, so agent text shows literally."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """`text` unchanged if it fits `limit` units, else cut on a code point boundary and ended with `marker`."""
    if units(text) <= limit:
        return text
    budget = limit - units(marker)
    kept: list[str] = []
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        if width > budget:
            break
        kept.append(char)
        budget -= width
    return "".join(kept).rstrip() + marker


def escape_clipped(text: str, limit: int, marker: str = ELLIPSIS) -> str:
    """Escaped `text` within `limit` units; an entity is never cut in half."""
    pieces, rest = _take_escaped(text, limit)
    if not rest:
        return "".join(pieces)
    pieces, _ = _take_escaped(text, limit - units(marker))
    return "".join(pieces).rstrip() + marker


def _take_escaped(text: str, limit: int) -> tuple[list[str], str]:
    """The longest escaped prefix of `text` within `limit` units, and the raw text left over."""
    pieces: list[str] = []
    used = 0
    for index, char in enumerate(text):
        piece = escape(char)
        width = units(piece)
        if used + width > limit:
            return pieces, text[index:]
        pieces.append(piece)
        used += width
    return pieces, ""


def plain(text: str, limit: int) -> dict[str, Any]:
    """A plain_text object; empty text (which Slack refuses) becomes a visible dash."""
    shown = clip(" ".join(text.split()) or "-", limit)
    return {"type": "plain_text", "text": shown, "emoji": True}


def mrkdwn(text: str) -> dict[str, Any]:
    """A mrkdwn object for text that is already escaped and within its limit."""
    return {"type": "mrkdwn", "text": text or " "}


def section(text: str, *, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": mrkdwn(text)}
    if block_id is not None:
        block["block_id"] = block_id
    return block


def context(*texts: str) -> Block:
    return {"type": "context", "elements": [mrkdwn(text) for text in texts[:MAX_CONTEXT_ELEMENTS]]}


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, MAX_HEADER_TEXT)}


def split_escaped(text: str, limit: int = MAX_SECTION_TEXT) -> list[tuple[str, int]]:
    """Escape `text` into chunks of at most `limit` units, breaking at line ends where possible.

    Each chunk comes with how many characters of `text` it shows, so a caller that drops the tail can say how much
    is missing. A ``` code fence left open at a chunk's end is closed there and reopened in the next chunk, so each
    section renders on its own.
    """
    chunks: list[tuple[str, int]] = []
    lines: list[str] = []
    used = shown = 0
    fenced = False
    for line, raw in _lines_within(text, limit - 8):
        width = units(line) + (1 if lines else 0)
        if lines and used + width + 4 > limit:  # 4: room to close an open fence
            chunks.append(("\n".join(lines) + ("\n```" if fenced else ""), shown))
            lines, used, shown = (["```"], 3, 0) if fenced else ([], 0, 0)
            width = units(line) + (1 if lines else 0)
        lines.append(line)
        used += width
        shown += raw
        if line.lstrip().startswith("```"):
            fenced = not fenced
    chunks.append(("\n".join(lines), shown))
    return chunks


def _lines_within(text: str, limit: int) -> Iterator[tuple[str, int]]:
    """Escaped lines of `text` with the raw characters each covers (its newline included); a line too long for one
    chunk is cut into pieces, at a space where one is near."""
    for raw in text.split("\n"):
        rest = raw
        while True:
            pieces, left = _take_escaped(rest, limit)
            if not left:
                yield "".join(pieces), len(rest) + 1
                break
            taken = rest[: len(rest) - len(left)]
            cut = taken.rfind(" ")
            if cut > len(taken) // 2:
                taken = taken[: cut + 1]
            yield escape(taken).rstrip(), len(taken)
            rest = rest[len(taken) :]


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")


def markdown_to_mrkdwn(text: str) -> str:
    """Turn the Markdown agents write into Slack's mrkdwn, before escaping: headings and **bold** become *bold*,
    list markers become bullets, `[text](url)` shows its address (no hidden link targets). Code is left alone."""
    out: list[str] = []
    fenced = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        if _RULE.match(line):
            out.append("──────────")
            continue
        if heading := _HEADING.match(line):
            line = f"*{heading[1]}*" if heading[1] else ""
        else:
            line = _BULLET.sub(lambda match: f"{match[1]}• ", line)
        out.append(_outside_code(line))
    return "\n".join(out)


def _outside_code(line: str) -> str:
    parts = line.split("`")
    for index in range(0, len(parts), 2):  # even parts are outside `inline code`
        converted = _BOLD.sub(lambda match: f"*{match[2]}*", parts[index])
        parts[index] = _LINK.sub(lambda match: f"{match[1]} ({match[2]})", converted)
    return "`".join(parts)
