"""Reading a reply: the text the person wrote, without quoted history, forwarded mail, header blocks, signatures or
"Sent from my …" lines.

Built in layers, each for what the one before misses:

1. HTML first where there is HTML (`html_text`): clients mark history there most reliably. The HTML reading
   decides what is new; the text part, when it says the same, supplies the lines as the person typed them.
2. Lines quoted with `>` are history wherever they are (top-posting, bottom-posting, interleaved answers are kept).
   So are lines quoted with initials ("JD> …") that a quote header opens (`quoting`). Fenced code is the person's.
3. Quote headers (`history_marks`): "On … wrote:" in some forty forms and languages, ASCII or full-width colons,
   wrapped over up to three lines; headers reduced to a date and a name ("2026年12月2日(火) 10:15 Bob <b@x>:") when
   a quote follows; and `mail-parser-reply`'s per-language patterns. A header followed by a quote only opens it
   (the reply may continue below it), an indented block under a header included; a header followed by unquoted,
   unindented text means everything below is history.
4. Header blocks (`From:`/`Von:`/`发件人：` with `Sent:`/`Date:`/…), separator and forwarded-message lines, signature
   delimiters, device footers, decorated rules with a signature under them, contact blocks and closings
   ("Thanks,\\nAlice") end the new text; a signature or closing under a line that announces it ("Send it to:") stays.
5. What no generic library can do: the bot knows what it sent (`sent`), so runs of lines that repeat it are history
   even when the client marked them in no way at all.

Invisible characters (zero-width spaces, BOM, bidi marks, soft hyphens, NBSP) are cleaned first. Every pattern runs
on single lines cut to a bounded length, so the reader's cost is linear in the size of the reply.
"""

# ruff: noqa: RUF001, RUF002 (headers in many scripts are quoted on purpose)

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Iterable
from functools import cache

from mailparser_reply.parser import EmailMessage as _ReplyParserMessage

from bot.email import history_marks as marks
from bot.email import quoting
from bot.email.html_text import MAX_HTML_CHARS as MAX_HTML_CHARS
from bot.email.html_text import html_to_text as html_to_text
from bot.email.mime import parse_mail as parse_mail
from bot.email.mime import reply_bodies as reply_bodies

MAX_TEXT_CHARS = 100_000
"""A human answer is short; the rest of a huge mail is history or junk, and regexes should not chew on megabytes."""

# Languages whose header patterns we take from mail-parser-reply. Polish is left out: its "From" pattern accepts a
# single line beginning with "Data:" or "Do:", which would cut ordinary answers.
_LIBRARY_LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "sv", "da", "cs", "ja", "ko", "zh")

_INVISIBLE = dict.fromkeys(
    map(ord, "\u200b\u2060\ufeff\u00ad\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c"), None
)
_SPACES = dict.fromkeys(map(ord, "\u00a0\u202f\u2007\u3000"), " ")
_LINE_BREAKS = re.compile(r"\r\n?|[\u2028\u2029\x85\x0b\x0c]")
_WROTE_INLINE = re.compile(r"(?:^|\s)(?:wrote|schrieb|a\s+[ée]crit|escribi[óo]|ha\s+scritto|schreef)\s*:\s+\S", re.I)
_WRAPPED_BRACKET = re.compile(r"^>\s*[:：]$")
_HEADER_BLOCK_REACH = 6
_CLOSING_TAIL_LINES = 4
_CLOSING_TAIL_WIDTH = 60
_SIGNATURE_LINES = 6
_SIGNATURE_WIDTH = 80
_LONG_RULE = 10
_NAME = re.compile(r"^[^\W\d_][^\d:;!?]{0,50}$")
_ECHO_STRIP = re.compile(r"[>*_#|`\u2022·\s]+")
_WORD = re.compile(r"\w+")
_STRONG_ECHO = 11
_LONE_ECHO = 25


def new_text(text: str, *, html: str | None = None, sent: str | None = None) -> str:
    """The new text of a reply: what the person wrote, without quoted history and the like.

    `text` is the reply's text/plain body (may be empty), `html` its text/html body. `sent` is the plain text the bot
    sent in that thread: lines that repeat it are history. Never raises.
    """
    has_text = bool(text.strip())
    if not html or not html.strip():
        return _read(text, sent) if has_text else ""
    from_html = _read(html_to_text(html), sent)
    if not has_text:
        return from_html
    from_text = _read(text, sent)
    if _words(from_text) == _words(from_html):
        return from_text
    aligned = _align(text, sent, _words(from_html))
    return from_html if aligned is None else aligned


def _read(body: str, sent: str | None) -> str:
    lines = _strip_history(_normalise(body[:MAX_TEXT_CHARS]))
    return _tidy(_finish(lines, sent))


def _finish(lines: list[str], sent: str | None) -> list[str]:
    if sent:
        lines = _drop_echo(lines, sent)
    return _drop_closing(_drop_signature(lines))


def _align(text: str, sent: str | None, target: list[str]) -> str | None:
    """The text part's own lines that say exactly what the HTML reading found, or None when they do not line up."""
    kept = _finish(_strip_history(_normalise(text[:MAX_TEXT_CHARS])), sent)
    words: list[str] = []
    for index, line in enumerate(kept):
        words.extend(_words(line))
        if len(words) >= len(target):
            return _tidy(kept[: index + 1]) if words == target and target else None
    return None


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _normalise(text: str) -> list[str]:
    text = _LINE_BREAKS.sub("\n", text).translate(_INVISIBLE).translate(_SPACES)
    return [quoting.without_tracking_mark(line.rstrip()) for line in text.split("\n")]


def _is_quoted(line: str) -> bool:
    return line.lstrip().startswith(">")


def _strip_history(lines: list[str]) -> list[str]:
    """Drop quoted lines and quote headers that open them; stop at the first mark of history that runs to the end.

    Fenced code is kept as it stands. A header followed by an indented block drops the block, and the text after it
    is read on (an answer below an indented quote); followed by any other unquoted text, it ends the reply.
    """
    library = _library_headers(lines)
    code = quoting.code_lines(lines)
    quoted = [index not in code and _is_quoted(line) for index, line in enumerate(lines)]
    initials = quoting.initials_lines(lines, code)
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()[: marks.MAX_LINE]
        if index in code:
            kept.append(line)
            index += 1
            continue
        if quoted[index]:
            if initials and marks.WROTE.search(stripped.lstrip("> ")):  # Supercite: '>>>>> "Bob" == … writes:'
                _open_initials(lines, index + 1, initials, quoted)
            index += 1
            continue
        if (
            marks.SEPARATOR.match(stripped)
            or marks.SIGNATURE_DELIMITER.match(line)
            or marks.DEVICE_FOOTER.match(stripped)
            or _header_block_at(lines, index)
            or _inline_header(stripped)
        ):
            break
        span, has_verb = _header_span(lines, index, quoted)
        if not span and library.get(index):
            span, has_verb = library[index], True
        if span:
            after = _open_initials(lines, index + span, initials, quoted)
            if after is None or quoted[after]:
                index += span  # the header opens a quote; a bottom-posted or interleaved answer may follow it
                continue
            if has_verb:
                end = quoting.indented_quote_end(lines, after)
                if end is None:
                    break
                index = end
                continue
        kept.append(line)
        index += 1
    return kept


def _open_initials(lines: list[str], start: int, initials: dict[str, list[int]], quoted: list[bool]) -> int | None:
    """The first content line from `start` (under a quote header); if it is quoted with initials ("JD> …"), so is
    every later line with the same initials."""
    after = _next_content(lines, start)
    if after is not None and initials and (prefix := quoting.initials_prefix(lines[after])) in initials:
        for index in initials[prefix]:
            quoted[index] = quoted[index] or index >= after
    return after


def _next_content(lines: list[str], start: int) -> int | None:
    return next((i for i in range(start, len(lines)) if lines[i].strip()), None)


def _header_span(lines: list[str], index: int, quoted: list[bool], *, look_ahead: bool = True) -> tuple[int, bool]:
    """How many lines (1-3) a quote header starting at `index` spans (0: none), and whether it has a "wrote" verb.

    A header without a verb ("вт, 2 дек. 2026 г. в 10:15, Bob <b@x>:") needs a time and a year or an address.
    A header wraps onto more lines only when it starts like one or stands after a blank line, and never onto a line
    that is a header by itself: then the header starts there, and this line ("2", typed right above it) is the answer.
    """
    first = lines[index].strip().lstrip("-=*_~ ")
    if not first or len(first) > marks.MAX_LINE:
        return 0, False
    opener = bool(marks.HEADER_OPENER.match(first))
    # A header's first line already holds part of its date or address; an answer above one ("Hello", "選 2") does not.
    may_wrap = opener or ((index == 0 or not lines[index - 1].strip()) and _dated_or_addressed(first))
    joined = first
    for span in range(1, 4):
        if span > 1:
            if index + span - 1 >= len(lines) or not may_wrap:
                break
            following = lines[index + span - 1].strip()
            closing_bracket = _WRAPPED_BRACKET.match(following)  # Gmail wraps "<bob@x\n>:" at the address's end
            if not following or (quoted[index + span - 1] and not closing_bracket) or len(following) > marks.MAX_LINE:
                break
            if look_ahead and _starts_header(lines, index + span - 1, quoted):
                break
            joined = f"{joined}{following}" if closing_bracket else f"{joined} {following}"
            joined = marks.MAILTO.sub("", joined)  # Outlook's "<bot@x<mailto:\nbot@x>>" wraps inside the address
        if marks.WROTE.search(joined) or (opener and marks.WROTE_THEN_WHO.search(joined)):
            if marks.DATE_OR_ADDRESS.search(joined):
                return span, True
        elif marks.ENDS_WITH_COLON.search(joined) and _dated(joined):
            return span, False
    return 0, False


def _starts_header(lines: list[str], index: int, quoted: list[bool]) -> bool:
    opens = marks.HEADER_OPENER.match(lines[index].strip()[: marks.MAX_LINE])
    return bool(opens) and _header_span(lines, index, quoted, look_ahead=False)[0] > 0


def _dated_or_addressed(text: str) -> bool:
    return "@" in text or bool(marks.TIME.search(text) or marks.YEAR.search(text))


def _dated(text: str) -> bool:
    return bool(marks.TIME.search(text)) and bool(marks.YEAR.search(text) or "@" in text)


def _inline_header(stripped: str) -> bool:
    """Yahoo's mobile app runs header and quoted text together: "On Tue, … Bob<b@x> wrote: An agent asks:"."""
    return bool(marks.HEADER_OPENER.match(stripped) and _WROTE_INLINE.search(stripped) and _dated(stripped))


def _header_block_at(lines: list[str], index: int) -> bool:
    """An Outlook-style header block: two or more header lines, one of them a From line, wrapped lines allowed."""
    if not marks.HEADER_LINE.match(lines[index][: marks.MAX_LINE]):
        return False
    headers, has_from, loose = 0, False, 0
    for line in lines[index : index + _HEADER_BLOCK_REACH]:
        if not line.strip():
            break
        if marks.HEADER_LINE.match(line[: marks.MAX_LINE]):
            headers += 1
            has_from = has_from or bool(marks.FROM_LINE.match(line[: marks.MAX_LINE]))
        else:
            loose += 1
            if loose > 2:
                break
    return headers >= 2 and has_from


@cache
def _library_pattern() -> re.Pattern[str]:
    return _ReplyParserMessage(text="", languages=list(_LIBRARY_LANGUAGES)).HEADER_REGEX


def _library_headers(lines: list[str]) -> dict[int, int]:
    """Header lines found by mail-parser-reply's patterns: {first line: number of lines}, unquoted ones only.

    It matches on stripped lines; overlong lines are cut first (no header is that long, and its patterns
    backtrack on them).
    """
    shortened = [line.strip()[: marks.MAX_LINE] for line in lines]
    text = "\n".join(shortened)
    found: dict[int, int] = {}
    try:
        matches = list(_library_pattern().finditer(text))
    except Exception:
        return found
    for match in matches:
        start = match.start() + (len(match.group()) - len(match.group().lstrip("\n")))
        first = text.count("\n", 0, start)
        if first >= len(shortened) or _is_quoted(shortened[first]) or not shortened[first]:
            continue
        span = match.group().strip("\n").count("\n") + 1
        found.setdefault(first, span)
    return found


def _echo_key(line: str) -> str:
    return " ".join(_ECHO_STRIP.sub(" ", unicodedata.normalize("NFKC", line)).split()).casefold()


def _drop_echo(lines: list[str], sent: str) -> list[str]:
    """Remove runs of lines that repeat what the bot sent: history quoted without any marker.

    A run starts and ends on a "strong" line (long enough not to be a coincidence, found in the sent text, even
    re-wrapped); short lines in between count when they equal a sent line. A run needs two strong lines, or one long
    one, so that an answer like "2" or "Postgres" is never mistaken for an echo.
    """
    sent_lines = {key for line in sent.splitlines() if (key := _echo_key(line))}
    blob = " ".join(_echo_key(line) for line in sent.splitlines())
    keys = [_echo_key(line[: marks.MAX_LINE]) for line in lines]

    def strong(key: str) -> bool:
        return len(key) >= _STRONG_ECHO and (key in sent_lines or key in blob)

    def weak(key: str) -> bool:
        return not key or key in sent_lines

    drop: set[int] = set()
    index = 0
    while index < len(lines):
        if not strong(keys[index]):
            index += 1
            continue
        end = last_strong = index
        strong_count, longest = 0, 0
        while end < len(lines) and (strong(keys[end]) or weak(keys[end])):
            if strong(keys[end]):
                last_strong = end
                strong_count += 1
                longest = max(longest, len(keys[end]))
            end += 1
        if strong_count >= 2 or longest >= _LONE_ECHO:
            drop.update(range(index, last_strong + 1))
        index = last_strong + 1
    return [line for i, line in enumerate(lines) if i not in drop]


def _drop_signature(lines: list[str]) -> list[str]:
    """Cut a signature: under a drawn rule ("━━━━", "~~~~", "__"), or a trailing block of a name and contacts.

    Never in fenced code, nor under a line that announces what follows ("Send it to:", "ask the DBA (").
    """
    code = quoting.code_lines(lines)
    content = [i for i, line in enumerate(lines) if line.strip()]
    for position, index in enumerate(content[1:], start=1):
        rule = lines[index].strip()
        if len(rule) > marks.MAX_LINE or not marks.RULE.match(rule):
            continue
        if index in code or quoting.announces(lines[content[position - 1]]):
            continue
        tail = [lines[i].strip() for i in content[position + 1 :]]
        if len(rule.replace(" ", "")) >= _LONG_RULE and len(tail) <= 2 * _SIGNATURE_LINES:
            return lines[:index]
        if tail and _signature_like(tail, need_contact=False):
            return lines[:index]
    if not content or content[-1] in code:
        return lines
    last = content[-1]
    if (
        len(content) > 1
        and not lines[last - 1].strip()
        and marks.SIGN_OFF.match(lines[last].strip()[: marks.MAX_LINE])
        and not quoting.announces(lines[content[-2]])
    ):
        return lines[:last]
    start = next((i + 1 for i in range(content[-1], -1, -1) if not lines[i].strip()), 0)
    block = [line.strip() for line in lines[start:] if line.strip()]
    if start > content[0] and len(block) >= 2 and _signature_like(block, need_contact=True):
        above = next(i for i in range(start - 1, -1, -1) if lines[i].strip())
        return lines if quoting.announces(lines[above]) else lines[:start]
    return lines


def _signature_like(block: list[str], *, need_contact: bool) -> bool:
    """A name on the first line and a few short lines; with `need_contact`, one of them a phone, address or site."""
    if len(block) > _SIGNATURE_LINES or any(len(line) > _SIGNATURE_WIDTH for line in block):
        return False
    named = bool(_NAME.match(block[0])) and len(block[0].split()) <= 4
    contact = any(marks.CONTACT.search(line) for line in block)
    return named and contact if need_contact else named or contact


def _drop_closing(lines: list[str]) -> list[str]:
    """Cut a closing ("Thanks,", "Best regards,") followed only by a few short lines (a name, a title)."""
    code = quoting.code_lines(lines)
    content = [i for i, line in enumerate(lines) if line.strip()]
    for position, index in enumerate(content[1:], start=1):
        if not marks.CLOSING.match(lines[index].strip()[: marks.MAX_LINE]):
            continue
        if index in code or quoting.announces(lines[content[position - 1]]):
            continue
        tail = content[position + 1 :]
        if len(tail) <= _CLOSING_TAIL_LINES and all(len(lines[i].strip()) <= _CLOSING_TAIL_WIDTH for i in tail):
            return lines[:index]
    return lines


def _tidy(lines: Iterable[str]) -> str:
    kept = list(lines)
    code = quoting.code_lines(kept)  # a `~~~` fence is code, not a decoration to trim
    start, end = 0, len(kept)
    while end > start and end - 1 not in code and marks.DECORATION.match(kept[end - 1]):
        end -= 1
    while start < end and start not in code and marks.DECORATION.match(kept[start]):
        start += 1
    text = textwrap.dedent("\n".join(kept[start:end]))
    return re.sub(r"\n{3,}", "\n\n", text).strip()
