"""Which lines of a reply are quoted without `>`, and which are code: the shapes where a reader loses the person's
words if it only knows `>` quoting.

- Fenced code (```` ``` ```` or `~~~` up to a closing fence of the same kind) is the person's own text: a `####`,
  `---` or `--` line in it is code, not a rule, a separator or a signature delimiter. A fence that never closes
  marks nothing (it may be history's, or a stray line).
- Initials quoting (Supercite, Lotus Notes, FidoNet: `JD> text`, ` C> text`, `hr> text`) counts as quoted when a
  quote header opens it and the same prefix starts two or more lines: a prompt the person pasted (`sqlite> …`,
  `mysql> …`) stays theirs.
- An indented block under a quote header ("On … wrote:" then every line indented) is the quote of clients that
  indent instead of marking; it ends at the first line that is not indented, where the person's text goes on.
- Gmail add-ons (Streak, Mailtrack) end the new text with a tracking mark, `ᐧ` (U+1427), on its own line or glued
  to the last word.

Every function here is one pass over the lines, each line looked at through a bounded prefix.
"""

from __future__ import annotations

import re

from bot.email import history_marks as marks

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INITIALS = re.compile(r"^\s{0,3}([^\W\d_]{1,10})>(?=[ \t>]|$)")
_INDENT = re.compile(r"^(?:\t| {2,})")
_TRACKING_MARK = "\u1427"
_SYLLABICS = range(0x1400, 0x1680)
"""Canadian syllabics, where U+1427 is a letter of the text and must stay."""


def code_lines(lines: list[str]) -> set[int]:
    """The indexes of lines inside closed fenced code blocks, the fences included."""
    code: set[int] = set()
    opened: tuple[int, str] | None = None
    for index, line in enumerate(lines):
        fence = _FENCE.match(line[: marks.MAX_LINE])
        if fence is None:
            continue
        mark = fence.group(1)
        if opened is None:
            opened = (index, mark)
        elif mark[0] == opened[1][0] and len(mark) >= len(opened[1]) and not line[fence.end() :].strip():
            code.update(range(opened[0], index + 1))
            opened = None
    return code


def initials_lines(lines: list[str], code: set[int]) -> dict[str, list[int]]:
    """The lines that start with a prefix such as `JD>`, by prefix, for the prefixes that start two lines or more."""
    found: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        if index not in code and (prefix := initials_prefix(line)):
            found.setdefault(prefix, []).append(index)
    return {prefix: indexes for prefix, indexes in found.items() if len(indexes) >= 2}


def initials_prefix(line: str) -> str | None:
    """The initials a line is quoted with ("JD" in "JD> text"), or None."""
    prefix = _INITIALS.match(line[:20])
    return prefix.group(1) if prefix else None


def indented_quote_end(lines: list[str], start: int) -> int | None:
    """Where an indented quote starting at `start` ends (the first line after it), or None if `start` is not indented.

    The quote is every following line that is blank or begins with the first line's indentation.
    """
    indent = _INDENT.match(lines[start])
    if indent is None or not lines[start].strip():
        return None
    prefix = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(prefix)):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # blank lines after the quote belong to the text that follows
    return end


def without_tracking_mark(line: str) -> str:
    """The line without a trailing tracking mark `ᐧ`, unless it follows a syllabic letter (then it is text)."""
    stripped = line.rstrip()
    if not stripped.endswith(_TRACKING_MARK):
        return line
    before = stripped[:-1].rstrip()
    if before and ord(before[-1]) in _SYLLABICS:
        return line
    return before


def announces(line: str) -> bool:
    """A line that ends in ":" or "(" says that what follows belongs to it, not to a signature or a closing."""
    return line.rstrip().endswith((":", "\uff1a", "("))
