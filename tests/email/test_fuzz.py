"""Untrusted mail never crashes the reader, the parser or the classifier (the watcher must keep running)."""

from __future__ import annotations

from email.message import Message

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.email.binding import ReplyBinding
from bot.email.classify import refusal
from bot.email.parse import parse_reply
from bot.email.reading import MAX_TEXT_CHARS, html_to_text, new_text, parse_mail, reply_bodies

from .samples import DATABASE, FEATURES, PLAN, SENT

QUESTIONS = [DATABASE, FEATURES, PLAN]
BINDING = ReplyBinding("fuzz-secret-0123456789abcdef", "bot@example.org")
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

reply_words = st.sampled_from(
    [
        "1",
        "2",
        "#3",
        "option 2",
        ":",
        ".",
        ")",
        "\n",
        " ",
        ",",
        "and",
        "skip",
        "approve",
        "Auth",
        "Postgres",
        "(Recommended)",
        ">",
        "On 2 Dec 2026 bob@x wrote:",
        "From: a",
        "Sent: b",
        "-- ",
        "Thanks,",
        "- ",
        "9",
    ]
)
replies = st.one_of(st.text(max_size=400), st.lists(reply_words, max_size=40).map("".join))


def read_everything(raw: bytes) -> None:
    message = parse_mail(raw)
    text, html = reply_bodies(message)
    new = new_text(text, html=html, sent=SENT)
    parse_reply(new, QUESTIONS)
    refusal(message, allowed=["@example.org"], own_address="bot@example.org", trusted_authserv_id="mx.example.org")
    BINDING.match(message)


@FAST
@given(replies, st.one_of(st.none(), st.text(max_size=300)))
def test_new_text_never_raises(text: str, html: str | None) -> None:
    assert isinstance(new_text(text, html=html, sent=SENT), str)


@FAST
@given(replies, st.sets(st.sampled_from(["db", "features", "plan"])))
def test_parse_reply_never_raises_and_only_picks_real_options(text: str, answered: set[str]) -> None:
    parsed = parse_reply(text, QUESTIONS, answered=answered)
    for question in QUESTIONS:
        item = parsed.items.get(question.id)
        if item is not None:
            assert set(item.selected) <= {option.label for option in question.options or ()}
    assert parsed.items or parsed.problems


@FAST
@given(st.binary(max_size=2000))
def test_binary_junk_is_handled(raw: bytes) -> None:
    read_everything(raw)


header_names = st.sampled_from(
    [
        "From",
        "To",
        "Cc",
        "Subject",
        "References",
        "In-Reply-To",
        "Content-Type",
        "Content-Transfer-Encoding",
        "Auto-Submitted",
        "Precedence",
        "Authentication-Results",
        "Return-Path",
        "Message-ID",
    ]
)
header_values = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=80),
    st.sampled_from(
        [
            "=?utf-8?q?broken",
            "=?x-unknown?b?////?=",
            "multipart/mixed; boundary=",
            "text/plain; charset=bogus-9",
            "text/plain; charset=utf-7",
            "base64",
            "quoted-printable",
            "<<>>@@",
            "<>",
            "mx.example.org; dmarc=pass",
        ]
    ),
)


@FAST
@given(st.lists(st.tuples(header_names, header_values), max_size=12), st.binary(max_size=500))
def test_malformed_headers_and_charsets_are_handled(headers: list[tuple[str, str]], body: bytes) -> None:
    raw = "".join(f"{name}: {value}\r\n" for name, value in headers).encode("utf-8", "surrogateescape")
    read_everything(raw + b"\r\n" + body)


def test_a_mime_bomb_is_read_without_recursing_to_the_bottom() -> None:
    depth = 2000
    opening = b"".join(f"Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n".encode() for i in range(depth))
    raw = b"From: alice@example.org\r\nSubject: bomb\r\n" + opening + b"Content-Type: text/plain\r\n\r\n2\r\n"
    read_everything(raw)  # no RecursionError
    message = parse_mail(raw)
    # Past MAX_MIME_PARTS parts only the headers are parsed: nothing is read at the bottom of the bomb.
    assert (message["Subject"], reply_bodies(message)) == ("bomb", ("", None))


def test_a_wide_mime_bomb_is_bounded() -> None:
    parts = b"".join(b"--b\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n" for _ in range(20_000))
    raw = b"From: a@example.org\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" + parts + b"--b--\r\n"
    message = parse_mail(raw)
    assert reply_bodies(message) == ("", None)
    assert message["From"] == "a@example.org"
    assert not message.is_multipart()  # headers only: the 20,000 parts were never parsed


def test_a_ten_megabyte_reply_is_read_only_as_far_as_the_bound() -> None:
    body = "2\n" + "word " * 2_000_000
    raw = b"From: alice@example.org\r\nTo: bot@example.org\r\nContent-Type: text/plain\r\n\r\n" + body.encode()
    read_everything(raw)
    # Bounded by construction: the reader sees the first MAX_TEXT_CHARS characters and nothing after them.
    assert new_text(body, sent=SENT) == new_text(body[:MAX_TEXT_CHARS], sent=SENT)
    assert new_text(body + "\nthe end", sent=SENT) == new_text(body, sent=SENT)


def test_ten_megabytes_of_quote_headers_are_cut_to_the_bound() -> None:
    text = ("On On On " * 200 + "\n") * 5000 + "From: a\nSent: b\n" * 1000
    assert len(text) > 10 * MAX_TEXT_CHARS
    assert new_text(text, sent=SENT) == new_text(text[:MAX_TEXT_CHARS], sent=SENT)


def test_a_broken_charset_still_yields_text() -> None:
    raw = b"From: a@example.org\r\nContent-Type: text/plain; charset=no-such-charset\r\n\r\n2\xff\xfe\r\n"
    message: Message = parse_mail(raw)
    text, _ = reply_bodies(message)
    assert text.startswith("2")


html_pieces = st.sampled_from(
    [
        "<div>",
        "</div>",
        "<blockquote>",
        "</blockquote>",
        '<blockquote type="cite">',
        '<div class="gmail_quote">',
        '<div id="divRplyFwdMsg">',
        "<br>",
        "<p>",
        "</p>",
        "<ul><li>",
        "</li></ul>",
        "<ol>",
        "<li>",
        "<pre>",
        "</pre>",
        "<style>",
        "</style>",
        "<!--",
        "-->",
        "<![CDATA[",
        "&nbsp;",
        "&#0;",
        "&#xD800;",
        "&bogus;",
        "<",
        ">",
        "<div <div",
        '<a href="x',
        "Postgres",
        "On 2 Dec 2026 bob@x wrote:",
        "\u200b",
        "\n",
    ]
)


@FAST
@given(st.lists(html_pieces, max_size=60).map("".join), st.text(max_size=100))
def test_any_html_reads_without_raising(html: str, text: str) -> None:
    assert isinstance(new_text(text, html=html, sent=SENT), str)


def test_deeply_nested_blockquotes_are_read_without_recursion_or_growth() -> None:
    html = "<div>2</div>" + "<blockquote>x" * 100_000 + "</blockquote>" * 100_000
    assert new_text("", html=html, sent=SENT) == "2"


def test_a_huge_html_body_is_cut_to_a_bounded_size() -> None:
    html = "<div>SQLite</div>" + "<div><span>filler text</span></div>" * 200_000
    assert new_text("", html=html).startswith("SQLite")
    assert len(html_to_text(html)) <= 1_000_000


def test_unclosed_tags_and_endless_attributes_are_read() -> None:
    assert isinstance(new_text("", html="<div " * 100_000 + 'class="' + "x" * 500_000), str)
    assert new_text("", html="<div>3</div><div id=divRplyFwdMsg") == "3"


@pytest.mark.parametrize(
    "line",
    [
        "On " * 50_000,
        "-" * 200_000 + "x",
        "From:" * 50_000,
        "1" * 200_000 + ":",
        "ezt írta (" + "x" * 200_000,
        "Am 2. Dez. 2026 schrieb " + "a " * 100_000,
        "a@b " * 50_000 + "wrote:",
        "> " * 100_000,
        "* " * 100_000 + "x",
        "10:15 2026 " * 20_000 + ":",
        "+1 (555) " * 30_000 + "x",
    ],
    ids=lambda line: repr(line[:12]),
)
def test_lines_built_to_make_regexes_backtrack_are_read(line: str) -> None:
    text = f"Postgres\n\n{line}\n{line}\n> quoted"
    assert new_text(text, sent=SENT).startswith("Postgres")


def test_a_hundred_thousand_header_like_lines_are_read() -> None:
    text = "2\n\n" + "On Tue, 2 Dec 2026 at 10:15, Bob <bob@example.org>\n" * 100_000
    assert new_text(text, sent=SENT).startswith("2")
