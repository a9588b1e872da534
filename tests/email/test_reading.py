"""new_text: the text a person wrote, whatever their mail client did around it."""

from __future__ import annotations

import pytest

from bot.email.reading import html_to_text, new_text

from .corpus import CORPUS, WRITTEN, Reply
from .samples import SENT

CASES = [
    pytest.param(reply, id=reply.name, marks=[pytest.mark.xfail(strict=True, reason=reply.miss)] if reply.miss else [])
    for reply in CORPUS
]


@pytest.mark.parametrize("reply", CASES)
def test_the_corpus_reads_back_exactly_the_new_text(reply: Reply) -> None:
    """A case marked `%% miss` is a known miss: it must fail (strict), so that fixing it shows."""
    assert new_text(reply.text, html=reply.html, sent=reply.sent) == reply.expected


def test_the_reader_stays_above_its_floor_on_the_whole_corpus() -> None:
    exact = sum(new_text(r.text, html=r.html, sent=r.sent) == r.expected for r in CORPUS)
    assert exact / len(CORPUS) >= 0.95


def test_the_written_corpus_is_as_broad_as_the_issue_asks() -> None:
    languages = {reply.language for reply in WRITTEN}
    clients = {reply.client for reply in WRITTEN}
    features = {feature for reply in WRITTEN for feature in reply.features}
    assert len(WRITTEN) >= 150
    assert len(languages) >= 20
    assert {"zh", "ja", "ko", "ru", "uk", "pl", "cs", "sv", "nl", "pt", "es", "it", "tr", "de", "fr"} <= languages
    assert {
        "gmail",
        "outlook-desktop",
        "outlook-web",
        "outlook-mobile",
        "apple-mail",
        "ios",
        "android",
        "thunderbird",
        "zoho",
        "yahoo",
        "protonmail",
    } <= clients
    assert {
        "wrapped-header",
        "fullwidth-colon",
        "date-and-name-header",
        "forwarded",
        "signature",
        "decorative-line",
        "invisible",
        "html",
        "interleaved",
        "gmail-quote",
        "blockquote-cite",
        "outlook-divrplyfwdmsg",
        "outlook-border-top",
        "moz-cite-prefix",
    } <= features


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


def test_html_decides_when_the_two_parts_disagree() -> None:
    assert new_text("2", html="<p>3</p>") == "3"


def test_the_text_part_supplies_the_lines_when_the_html_agrees() -> None:
    html = "<div>Postgres</div><div>and backups</div><blockquote>old</blockquote>"
    assert new_text("Postgres\nand backups\n\n> old", html=html) == "Postgres\nand backups"


def test_history_the_html_marks_is_cut_from_the_text_part_too() -> None:
    # Outlook's text part has an unmarked, unknown header; the HTML marks it with divRplyFwdMsg.
    text = "* Auth\n* Billing\n\nQuien: bot\nCuando: ayer\n\nold question text"
    html = '<div>* Auth</div><div>* Billing</div><div id="divRplyFwdMsg">Quien: bot</div><div>old question text</div>'
    assert new_text(text, html=html) == "* Auth\n* Billing"


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


def test_an_answer_that_ends_in_a_colon_before_a_quote_is_kept() -> None:
    assert new_text("About this one:\n> Which database?\nPostgres.") == "About this one:\nPostgres."


def test_an_answer_with_a_time_and_a_colon_but_no_quote_after_it_is_kept() -> None:
    text = "Postgres, and let's talk on 3 Dec 2026 at 10:15:\nbring the backup plan"
    assert new_text(text) == text


def test_a_multi_select_paragraph_of_labels_is_not_a_signature() -> None:
    assert new_text("My picks\n\nAuth\nBilling") == "My picks\n\nAuth\nBilling"


def test_a_short_rule_inside_an_answer_is_kept_when_no_signature_follows() -> None:
    text = "1: Postgres\n---\n2: the first release needs auth and billing, not search"
    assert new_text(text) == text


def test_a_single_header_like_line_is_kept() -> None:
    assert new_text("To: the whole team, Postgres is fine.") == "To: the whole team, Postgres is fine."


def test_a_contact_line_in_the_answer_is_kept() -> None:
    text = "Postgres.\n\nCall me on +44 20 7946 0000 if the migration needs a hand."
    assert new_text(text) == text


def test_a_hyphen_list_item_at_the_end_is_not_a_dash_sign_off() -> None:
    assert new_text("My pick:\n\n- Billing") == "My pick:\n\n- Billing"


def test_a_greeting_line_is_not_joined_into_the_quote_header_below_it() -> None:
    text = "Hello\n02.04.2026 14:20 Bob <\nbob@example.org> wrote:\n\n> Hi"
    assert new_text(text) == "Hello"
