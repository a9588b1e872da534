"""A shell command split into the simple commands it runs, so that a rule allows all of them or none.

`git status && rm -rf build` is two commands; `echo $(rm -rf /)` is two as well. A rule that allows `git status*`
must see both parts, or it would allow the second one hidden behind the first. The split follows the shell's own
reading closely enough to never merge two commands into one part: it separates at `&&`, `||`, `;`, `|`, `&` and
newlines, reads quotes ('single', "double", $'ANSI-C') and backslash escapes, and reads what runs inside `$(…)`,
backticks, `( … )` subshells and `<(…)` / `>(…)` as parts of their own. What it cannot be sure of (an unbalanced
quote or parenthesis, a here-document, nesting deeper than `MAX_NESTING`) gives None: no rule may allow it.
"""

from __future__ import annotations

import re

MAX_NESTING = 64
"""Substitutions and subshells nested deeper than this are not read (a person decides); no real command nests so."""

_PLAIN = re.compile(r"[^\\'\"`$()<>;&|\n]+")
"""A run of characters that mean nothing to the splitter, skipped at once (a long command is mostly these)."""
_PLAIN_IN_DOUBLE_QUOTES = re.compile(r'[^\\"`$]+')
_PLAIN_IN_BRACES = re.compile(r"[^\\'\"`${}]+")

RESERVED_WORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "time"})
"""Words that may stand before a command without being it (`then rm -rf x`): deny rules look past them."""


class _Unreadable(Exception):
    """The command cannot be split for sure."""


def command_parts(command: str) -> tuple[str, ...] | None:
    """The simple commands `command` runs, each as written (surrounding blanks removed), in the order they start:
    `echo $(date)` gives `("echo $(date)", "date")`. None when the command cannot be read for sure.

    A subshell standing alone, `( cd x && make )`, gives only the commands inside it.
    """
    try:
        return tuple(text for _, text in sorted(_Splitter(command).split()))
    except _Unreadable:
        return None


def without_reserved_words(part: str) -> str:
    """`part` with the reserved words before its command removed (`then rm -rf x` → `rm -rf x`), for deny rules."""
    words = part.split()
    start = 0
    while start < len(words) and words[start] in RESERVED_WORDS:
        start += 1
    if start == 0:
        return part
    return " ".join(words[start:])


class _Splitter:
    """One pass over a command; nested command texts (backticks) get a splitter of their own, one level deeper."""

    def __init__(self, text: str, depth: int = 0) -> None:
        if depth > MAX_NESTING:
            raise _Unreadable
        self.text = text
        self.pos = 0
        self.depth = depth
        self.parts: list[tuple[int, str]] = []
        self.offset = 0
        """Where `text` starts in the outermost command, so that inner parts sort by where they stand."""

    def split(self) -> list[tuple[int, str]]:
        self._commands(closer=None, depth=self.depth)
        return self.parts

    # -- lists of commands -------------------------------------------------------------------------------------------

    def _commands(self, closer: str | None, depth: int) -> None:
        """Read commands up to `closer` (left unread) or, without one, to the end; each simple command is a part."""
        if depth > MAX_NESTING:
            raise _Unreadable
        text = self.text
        start = self.pos
        group_end = -1  # where a subshell that opens this command closes
        while self.pos < len(text):
            char = text[self.pos]
            if char == ")":
                if closer is None:
                    raise _Unreadable
                self._emit(start, group_end)
                return
            if char in ";\n":
                self._emit(start, group_end)
                self.pos += 1
            elif char == "|":
                if self.pos > start and text[self.pos - 1] == ">":
                    self.pos += 1  # >| file: a redirection
                    continue
                self._emit(start, group_end)
                self.pos += 2 if text.startswith(("||", "|&"), self.pos) else 1
            elif char == "&":
                if text.startswith("&&", self.pos):
                    self._emit(start, group_end)
                    self.pos += 2
                elif text.startswith("&>", self.pos) or (self.pos > start and text[self.pos - 1] in "<>"):
                    self.pos += 1  # a redirection: &> file, 2>&1, <&3
                    continue
                else:
                    self._emit(start, group_end)
                    self.pos += 1
            elif char == "(":
                opens_command = not text[start : self.pos].strip()
                self.pos += 1
                self._nested(depth)
                if opens_command:
                    group_end = self.pos
                continue
            else:
                self._word(depth)
                continue
            start = self.pos
            group_end = -1
        if closer is not None:
            raise _Unreadable
        self._emit(start, group_end)

    def _nested(self, depth: int) -> None:
        """The commands of a `(`…`)` just opened, up to and past its `)`."""
        self._commands(closer=")", depth=depth + 1)
        if self.pos >= len(self.text) or self.text[self.pos] != ")":
            raise _Unreadable
        self.pos += 1

    def _emit(self, start: int, group_end: int) -> None:
        raw = self.text[start : self.pos]
        part = raw.strip()
        if not part:
            return
        if group_end > start and not self.text[group_end : self.pos].strip():
            return  # a subshell alone: its commands are the parts
        self.parts.append((self.offset + start + len(raw) - len(raw.lstrip()), part))

    # -- words -------------------------------------------------------------------------------------------------------

    def _word(self, depth: int) -> None:
        """Read one piece of a word at `pos`: plain characters, a quote, an escape, or an expansion."""
        text = self.text
        char = text[self.pos]
        if plain := _PLAIN.match(text, self.pos):
            self.pos = plain.end()
        elif char == "\\":
            self._escape()
        elif char == "'":
            self.pos = self._closing_quote(self.pos + 1)
        elif char == '"':
            self._double_quoted(depth)
        elif char == "`":
            self._backticks(depth)
        elif char == "$":
            self._dollar(depth)
        elif char == "<" and text.startswith("<<", self.pos):
            if not text.startswith("<<<", self.pos):
                raise _Unreadable  # a here-document: its lines are data, not commands, and not read here
            self.pos += 3
        else:  # < or > alone (a redirection); ( ) ; & | are the list's
            self.pos += 1

    def _escape(self) -> None:
        if self.pos + 1 >= len(self.text):
            raise _Unreadable
        self.pos += 2

    def _closing_quote(self, pos: int) -> int:
        end = self.text.find("'", pos)
        if end < 0:
            raise _Unreadable
        return end + 1

    def _double_quoted(self, depth: int) -> None:
        text = self.text
        self.pos += 1
        while self.pos < len(text):
            char = text[self.pos]
            if plain := _PLAIN_IN_DOUBLE_QUOTES.match(text, self.pos):
                self.pos = plain.end()
            elif char == '"':
                self.pos += 1
                return
            elif char == "\\":
                self._escape()
            elif char == "`":
                self._backticks(depth)
            else:
                self._dollar(depth)
        raise _Unreadable

    def _dollar(self, depth: int) -> None:
        text = self.text
        if text.startswith("$(", self.pos):
            self.pos += 2
            self._nested(depth)
        elif text.startswith("${", self.pos):
            self.pos += 2
            self._braces(depth + 1)
        elif text.startswith("$'", self.pos):
            self._ansi_c_quoted()
        else:
            self.pos += 1

    def _braces(self, depth: int) -> None:
        """A parameter expansion `${…}` up to and past its `}`; substitutions inside it run too."""
        if depth > MAX_NESTING:
            raise _Unreadable
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if plain := _PLAIN_IN_BRACES.match(text, self.pos):
                self.pos = plain.end()
            elif char == "}":
                self.pos += 1
                return
            elif char == "{":
                self.pos += 1
            elif char == "\\":
                self._escape()
            elif char == "'":
                self.pos = self._closing_quote(self.pos + 1)
            elif char == '"':
                self._double_quoted(depth)
            elif char == "`":
                self._backticks(depth)
            else:
                self._dollar(depth)
        raise _Unreadable

    def _ansi_c_quoted(self) -> None:
        text = self.text
        self.pos += 2
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self._escape()
            elif char == "'":
                self.pos += 1
                return
            else:
                self.pos += 1
        raise _Unreadable

    def _backticks(self, depth: int) -> None:
        """An old-style substitution: its text, with the escapes backticks strip, is split as a command of its own."""
        text = self.text
        start = self.pos + 1
        pos = start
        while pos < len(text):
            char = text[pos]
            if char == "\\":
                pos += 2
                continue
            if char == "`":
                break
            pos += 1
        else:
            raise _Unreadable
        inner = re.sub(r"\\([\\`$])", r"\1", text[start:pos])
        nested = _Splitter(inner, depth + 1)
        nested.offset = self.offset + start
        self.parts.extend(nested.split())
        self.pos = pos + 1
