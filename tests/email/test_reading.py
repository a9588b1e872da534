"""new_text: the text a person wrote, whatever their mail client did around it."""

from __future__ import annotations

import pytest

from bot.email.reading import html_to_text, new_text

from .corpus import CORPUS, Reply
from .samples import SENT


@pytest.mark.parametrize("reply", CORPUS, ids=[reply.name for reply in CORPUS])
def test_the_corpus_reads_back_exactly_the_new_text(reply: Reply) -> None:
    assert new_text(reply.text, html=reply.html, sent=reply.sent) == reply.expected


def test_the_corpus_covers_every_style_the_issue_names() -> None:
    names = " ".join(reply.name for reply in CORPUS)
    for style in (
        "gmail",
        "outlook classic",
        "starred",
        "outlook for mac",
        "apple mail",
        "iphone",
        "html only",
        "german",
        "french",
        "bottom-posted",
        "forwarded",
        "signature",
        "pitfall",
        "top-posted",
    ):
        assert style in names


def test_plain_text_wins_over_html_when_both_are_there() -> None:
    assert new_text("2", html="<p>3</p>") == "2"


def test_html_is_read_when_the_text_part_is_empty() -> None:
    assert new_text("  \n", html="<p>SQLite</p>") == "SQLite"


def test_html_conversion_does_not_escape_like_markdown() -> None:
    assert html_to_text("<p>1. Postgres</p><p>- Auth</p><p>+ more</p><p>a\\b *c* _d_</p>").split() == [
        "1.",
        "Postgres",
        "-",
        "Auth",
        "+",
        "more",
        "a\\b",
        "*c*",
        "_d_",
    ]


def test_a_list_written_with_dashes_survives() -> None:
    assert new_text("- Auth\n- Billing\n- Export") == "- Auth\n- Billing\n- Export"


def test_a_short_answer_that_also_appears_in_the_sent_mail_is_kept() -> None:
    assert new_text("MySQL", sent=SENT) == "MySQL"
    assert new_text("1", sent=SENT) == "1"


def test_quoting_one_line_of_the_question_in_a_sentence_is_kept() -> None:
    assert new_text("Which database should the new service use? Postgres.", sent=SENT) == (
        "Which database should the new service use? Postgres."
    )


def test_a_wrote_header_followed_by_unquoted_history_ends_the_reply() -> None:
    text = "Postgres\n\nOn Tue, Dec 2, 2026 at 10:15 AM Bob <bob@example.org> wrote:\nAn old message\nwith lines"
    assert new_text(text) == "Postgres"


def test_a_sentence_ending_in_wrote_without_a_date_or_address_is_kept() -> None:
    assert new_text("Here is what Bob wrote:\nuse SQLite") == "Here is what Bob wrote:\nuse SQLite"


def test_closing_words_in_the_middle_of_an_answer_are_kept() -> None:
    text = "Postgres\n\nThanks\nbut please also check the backup policy with the team before anything is migrated"
    assert new_text(text) == text


def test_invisible_characters_and_windows_line_endings_are_cleaned() -> None:
    assert new_text("\ufeffSQLite\u200b\r\n\r\n") == "SQLite"


def test_nbsp_indented_quote_markers_still_count_as_quotes() -> None:
    assert new_text("2\n\u00a0> old text\n\u00a0> more") == "2"


def test_an_empty_reply_is_empty() -> None:
    assert new_text("") == ""
    assert new_text("", html="") == ""
    assert new_text("", html="<html><body></body></html>") == ""


def test_a_huge_reply_is_cut_to_a_bounded_size() -> None:
    assert len(new_text("x" * 10_000_000)) <= 100_000
