"""Reply reading: how often each reader recovers exactly the new text of a reply, on the same corpus in one run.

Readers: handraise's `new_text` (with the bot's sent mail, as the channel calls it), email-reply-parser
(`EmailReplyParser.parse_reply`), mail-parser-reply (`latest_reply`, every language it has) and quotequail
(`quote`/`quote_html` with the intro line counted as quoted, its expanded parts joined). The comparison libraries
are installed for this run only:

    uv run --with email-reply-parser --with quotequail python bench/reply_reading.py [--fixtures DIR ...] [--misses]

The corpus is `tests/email/corpus/` (and the first replies in `tests/email/classic_replies.py`). `--fixtures DIR`
scores every `*.txt` file in DIR written in the corpus format instead, e.g. replies labelled by hand from public
fixture sets kept outside the repository. A reply with a text part is given to the libraries as text; an HTML-only
reply is rendered to text without handraise's history cuts (quotequail reads the HTML itself). "exact" compares
after stripping leading and trailing white space; "words" ignores all white-space differences.

"lost words" counts the words of the expected new text (runs of letters and digits) that are missing from the
reader's output, as a multiset: the person's words a reader dropped, the worse failure, since an answer cut short
is read wrongly where a leftover quote is only noise. "extra words" counts the other way round (words of the output
the person did not write), so that a reader cannot score no lost words by keeping the whole mail.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.email.html_text import html_to_text
from bot.email.reading import new_text
from tests.email.corpus import CORPUS, Reply, cases_in

Reader = Callable[[Reply], str]


def _library(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        sys.exit(
            f"{name} is not installed; run: uv run --with email-reply-parser --with quotequail "
            "python bench/reply_reading.py"
        )


def _plain(reply: Reply) -> str:
    return reply.text if reply.text.strip() else html_to_text(reply.html or "", cut_history=False)


def readers() -> dict[str, Reader]:
    erp = _library("email_reply_parser")
    quotequail = _library("quotequail")
    from mailparser_reply import EmailReplyParser
    from mailparser_reply.constants import MAIL_LANGUAGES

    languages = [language for language in MAIL_LANGUAGES if language != "david"]
    mpr = EmailReplyParser(languages=languages)

    def ours(reply: Reply) -> str:
        return new_text(reply.text, html=reply.html, sent=reply.sent)

    def email_reply_parser(reply: Reply) -> str:
        return erp.EmailReplyParser.parse_reply(_plain(reply)) or ""

    def mail_parser_reply(reply: Reply) -> str:
        return mpr.parse_reply(_plain(reply)) or ""

    def quotequail_reader(reply: Reply) -> str:
        if reply.text.strip() or not reply.html:
            parts = quotequail.quote(reply.text, quote_intro_line=True)
            return "\n".join(text for expanded, text in parts if expanded)
        parts = quotequail.quote_html(reply.html, quote_intro_line=True)
        return "\n".join(html_to_text(html, cut_history=False) for expanded, html in parts if expanded)

    return {
        "handraise": ours,
        "email-reply-parser": email_reply_parser,
        "mail-parser-reply": mail_parser_reply,
        "quotequail": quotequail_reader,
    }


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def _words(text: str) -> str:
    return " ".join(text.split())


_WORD = re.compile(r"\w+")


def lost_words(expected: str, got: str) -> int:
    """How many words of `expected` are missing from `got`, counted as a multiset (each occurrence once)."""
    missing = Counter(_WORD.findall(expected)) - Counter(_WORD.findall(got))
    return sum(missing.values())


def score(cases: list[Reply], show_misses: bool) -> None:
    table = readers()
    exact: dict[str, dict[str, int]] = {name: defaultdict(int) for name in table}
    words: dict[str, int] = defaultdict(int)
    lost: dict[str, int] = defaultdict(int)
    losing: dict[str, int] = defaultdict(int)
    extra: dict[str, int] = defaultdict(int)
    written = 0
    seconds: dict[str, float] = defaultdict(float)
    totals: dict[str, int] = defaultdict(int)
    clients: dict[str, dict[str, int]] = {name: defaultdict(int) for name in table}
    client_totals: dict[str, int] = defaultdict(int)
    for reply in cases:
        totals[reply.language] += 1
        written += len(_WORD.findall(reply.expected))
        client_totals[reply.client] += 1
        for name, read in table.items():
            started = time.perf_counter()
            try:
                got = _clean(read(reply))
            except Exception as error:  # a library that crashes on a reply scores a miss, and says so
                got = f"<{type(error).__name__}: {error}>"
            seconds[name] += time.perf_counter() - started
            dropped = lost_words(reply.expected, got)
            lost[name] += dropped
            losing[name] += dropped > 0
            extra[name] += lost_words(got, reply.expected)
            if got == reply.expected:
                exact[name][reply.language] += 1
                clients[name][reply.client] += 1
            elif name == "handraise" and show_misses:
                print(
                    f"MISS {reply.name} ({dropped} lost): got {got[:120]!r}, want {reply.expected[:80]!r}",
                    file=sys.stderr,
                )
            words[name] += _words(got) == _words(reply.expected)
    names = list(table)
    count = len(cases)
    print(f"{count} replies, {len(totals)} languages, {len(client_totals)} clients, {written} words written\n")
    print("| reader | exact | same words | lost words | replies losing words | extra words | time per reply |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        hits = sum(exact[name].values())
        print(
            f"| {name} | {hits}/{count} ({100 * hits / count:.1f}%) | {100 * words[name] / count:.1f}% "
            f"| {lost[name]} ({100 * lost[name] / max(written, 1):.1f}%) | {losing[name]} | {extra[name]} "
            f"| {1000 * seconds[name] / count:.2f} ms |"
        )
    print("\nExact, per language:\n")
    print("| language | replies | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for language in sorted(totals, key=lambda key: (-totals[key], key)):
        shown = " | ".join(f"{exact[name][language]}" for name in names)
        print(f"| {language} | {totals[language]} | {shown} |")
    print("\nExact, per client:\n")
    print("| client | replies | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for client in sorted(client_totals, key=lambda key: (-client_totals[key], key)):
        shown = " | ".join(f"{clients[name][client]}" for name in names)
        print(f"| {client} | {client_totals[client]} | {shown} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, action="append", help="score the corpus-format files in DIR")
    parser.add_argument("--misses", action="store_true", help="list handraise's misses on stderr")
    options = parser.parse_args()
    cases = CORPUS
    if options.fixtures:
        paths = [path for folder in options.fixtures for path in sorted(folder.glob("*.txt"))]
        cases = [reply for path in paths for reply in cases_in(path)]
    if not cases:
        sys.exit("no replies to score")
    score(cases, options.misses)


if __name__ == "__main__":
    main()
