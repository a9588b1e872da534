"""Quotes without `>`, code, and what a line announces: the reader cuts quoted text, never the person's words.

The corpus (`corpus/lost_words.txt`) holds whole replies of each shape; these tests pin the edges: what stays the
person's when the quote is not certain, and input built to make the new parsing slow.
"""

from __future__ import annotations

import pytest

from bot.email.quoting import code_lines, indented_quote_end, initials_lines, without_tracking_mark
from bot.email.reading import new_text

from .samples import SENT, quoted

HEADER = "On Tue, Dec 2, 2026 at 10:15 AM handraise <bot@example.org> wrote:"


def test_an_indented_block_under_a_header_is_the_quote_and_the_answer_below_it_is_kept() -> None:
    text = f"{HEADER}\n\n{quoted(SENT, '    ')}\n\nPostgres."
    assert new_text(text, sent=SENT) == "Postgres."


def test_a_header_followed_by_unindented_history_still_ends_the_reply() -> None:
    text = f"Postgres\n\n{HEADER}\nAn old message\n  with an indented line\nand more of it"
    assert new_text(text) == "Postgres"


def test_an_indented_block_under_a_line_without_a_quote_header_is_the_persons() -> None:
    text = "Run this on 2 Dec 2026 at 10:15:\n\n    SELECT 1;\n\nthen switch."
    assert new_text(text) == text


def test_initials_under_a_quote_header_are_quoted() -> None:
    text = f"{HEADER}\n\nJD> old line one\nJD> old line two\n\nPostgres."
    assert new_text(text) == "Postgres."


def test_a_pasted_prompt_that_no_quote_header_opens_is_kept() -> None:
    text = "SQLite is too old here:\n\nsqlite> select sqlite_version();\n3.7.17\nsqlite> .quit\n\nSo Postgres."
    assert new_text(text) == text


def test_a_single_initials_like_line_under_a_header_is_kept_with_the_answer() -> None:
    # One "A>" line is not a quoting convention; the header's unquoted text ends the reply as before.
    assert new_text(f"Postgres\n\n{HEADER}\nA> B\n") == "Postgres"


def test_code_is_not_a_signature_a_separator_or_a_quote() -> None:
    code = "```\n-- \n" + "-" * 40 + "\n>>> import sqlite3\n####\nBob Example\nbob@example.org\n```"
    text = f"Postgres:\n\n{code}\n\nThat is all."
    assert new_text(text) == text.replace("-- \n", "--\n")


def test_a_fence_that_never_closes_protects_nothing() -> None:
    assert new_text("Postgres\n```\nmore\n-- \nAlice") == "Postgres\n```\nmore"


def test_a_tilde_fence_at_the_end_is_kept() -> None:
    text = "Postgres with:\n\n~~~\nlock_timeout = 5s\n~~~"
    assert new_text(text) == text


def test_a_line_that_announces_keeps_the_block_under_it() -> None:
    assert new_text("Send it to:\n\nBob Example\nbob@example.org") == "Send it to:\n\nBob Example\nbob@example.org"
    assert new_text("Write at the end (\n\n-The team") == "Write at the end (\n\n-The team"


def test_a_signature_under_a_line_that_announces_nothing_is_still_cut() -> None:
    assert new_text("Postgres.\n\nBob Example\nbob@example.org") == "Postgres."


def test_an_answer_typed_right_above_a_header_is_not_joined_into_it() -> None:
    text = f"2\n2026-12-02 10:15 GMT+01:00 handraise <bot@example.org>:\n{quoted(SENT)}"
    assert new_text(text, sent=SENT) == "2"


def test_a_mailto_link_wrapped_inside_a_header_is_part_of_the_header() -> None:
    header = "On Tue, Dec 2, 2026 at 10:15 AM handraise <bot@example.org<mailto:\nbot@example.org>> wrote:"
    assert new_text(f"{header}\n{quoted(SENT)}\n\nPostgres.", sent=SENT) == "Postgres."


def test_the_tracking_mark_goes_but_syllabics_stay() -> None:
    assert new_text("2\u1427") == "2"
    assert new_text("Postgres\n\u1427") == "Postgres"
    assert without_tracking_mark("\u14c0\u1427") == "\u14c0\u1427"


def test_fences_are_matched_by_kind_and_length() -> None:
    lines = ["````", "```", "~~~", "````", "x", "```"]
    assert code_lines(lines) == {0, 1, 2, 3}


def test_initials_count_only_when_the_prefix_repeats() -> None:
    assert initials_lines(["JD> a", "x", "JD> b", "C> c"], set()) == {"JD": [0, 2]}


def test_an_indented_quote_ends_at_the_first_unindented_line() -> None:
    assert indented_quote_end(["  a", "", "  b", "", "c"], 0) == 3
    assert indented_quote_end(["a"], 0) is None


@pytest.mark.parametrize(
    "text",
    [
        "`" * 200_000,
        "```\n" * 50_000,
        "~~~ " * 50_000 + "\n~~~",
        "JD> " * 50_000,
        "JD> x\n" * 30_000,
        f"{HEADER}\n" + "JD> x\n" * 30_000 + "Postgres",
        ">" * 200_000 + " x",
        "> " * 20_000 + "JD>" * 20_000,
        f"{HEADER}\n" + " " * 200_000 + "x\n" + "  y\n" * 30_000,
        f"{HEADER}\n" + "\t" * 100_000 + "x\n" + "\t\n" * 50_000,
        "x" * 200_000 + "\u1427",
        "\u1427" * 200_000,
        "(" * 200_000,
        ":\n" * 100_000,
        "<mailto:" * 30_000 + "> wrote:",
        "On Tue, 2 Dec 2026 at 10:15, Bob <bob@example.org<mailto:\n" * 20_000,
        "2\n" + "2026-12-02 10:15 GMT+01:00 Bob\n" * 20_000,
        "Am 2026-12-02 um 10:15 schrieb Bob " + "<mailto:b" * 20_000 + ":",
    ],
    ids=lambda text: repr(text[:14]),
)
def test_hostile_input_for_the_new_shapes_is_read(text: str) -> None:
    """Each completes in time linear in its size (there is no timing assertion: a quadratic path would hang)."""
    assert isinstance(new_text(f"Postgres\n\n{text}", sent=SENT), str)
