"""The reply corpus: replies written in the style of each mail client and language, with the text a person wrote.

Every reply here was written for this project, modelled on how the clients really quote (the public test suites of
other reply parsers were studied for the shapes, nothing was copied from them). Each `*.txt` file holds cases:

    %% case <name>
    %% client <client>            gmail, outlook-desktop, outlook-web, outlook-mobile, apple-mail, ios, android, ...
    %% language <code>            ISO 639-1
    %% features <word> <word>     what the case exercises (top-posted, wrapped-header, html, signature, ...)
    %% sent one|three             which mail of the bot's the reply answers (default one)
    %% miss <why>                 the reader is known to get this one wrong (the test then expects it to fail)
    %% text                       the text/plain part, up to the next %% line
    %% html                       the text/html part
    %% expected                   what the person wrote

Within a part, `⟦SENT⟧` is the bot's mail as text, `⟦>SENT⟧` the same quoted with "> ", `⟦SENT-HTML⟧` as HTML
(the `3` forms are the three-question mail), and `⟦U+200B⟧` is that code point (invisible characters stay visible in
the files). `⟦PREFIX|SENT⟧` is the bot's mail with every line prefixed by PREFIX, for the clients that quote without
"> ": `⟦    |SENT⟧` indented four spaces, `⟦TAB|SENT3⟧` by a tab, `⟦HR> |SENT⟧` with the writer's initials.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..classic_replies import CORPUS as CLASSIC
from ..classic_replies import Reply
from ..samples import SENT, SENT_THREE, quoted

HERE = Path(__file__).parent


def _html(text: str) -> str:
    return "".join(f"<div>{line or '<br>'}</div>" for line in text.splitlines())


_PLACEHOLDERS = {
    "SENT": SENT,
    ">SENT": quoted(SENT),
    "SENT-HTML": _html(SENT),
    "SENT3": SENT_THREE,
    ">SENT3": quoted(SENT_THREE),
    "SENT3-HTML": _html(SENT_THREE),
}
_PLACEHOLDER = re.compile(r"⟦([^⟧]{1,20})⟧")


def _expand(text: str) -> str:
    def one(found: re.Match[str]) -> str:
        name = found[1]
        if name.startswith("U+"):
            return chr(int(name[2:], 16))
        if "|" in name:
            prefix, _, base = name.partition("|")
            return quoted(_PLACEHOLDERS[base], prefix.replace("TAB", "\t"))
        return _PLACEHOLDERS[name]

    return _PLACEHOLDER.sub(one, text)


def cases_in(path: Path) -> list[Reply]:
    """The cases of one corpus file (any file in the corpus format, also outside the repository)."""
    replies: list[Reply] = []
    fields: dict[str, str] = {}
    parts: dict[str, list[str]] = {}
    section: list[str] | None = None

    def finish() -> None:
        if not fields:
            return
        text = {name: _expand("\n".join(lines).strip("\n")) for name, lines in parts.items()}
        sent = SENT_THREE if fields.get("sent") == "three" else SENT
        replies.append(
            Reply(
                name=f"{path.stem}/{fields['case']}",
                text=text.get("text", ""),
                html=text.get("html"),
                expected=text["expected"].strip(),
                sent=sent,
                client=fields["client"],
                language=fields["language"],
                features=tuple(fields.get("features", "").split()),
                miss=fields.get("miss"),
            )
        )

    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.startswith("%% "):
            if section is not None:
                section.append(line)
            continue
        key, _, value = line[3:].partition(" ")
        if key == "case":
            finish()
            fields, parts, section = {"case": value.strip()}, {}, None
        elif key in ("text", "html", "expected"):
            section = parts.setdefault(key, [])
        else:
            fields[key] = value.strip()
            section = None
    finish()
    return replies


WRITTEN: list[Reply] = [reply for path in sorted(HERE.glob("*.txt")) for reply in cases_in(path)]
CORPUS: list[Reply] = [*CLASSIC, *WRITTEN]

__all__ = ("CORPUS", "WRITTEN", "Reply", "cases_in")
