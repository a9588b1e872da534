"""Rendering a question as an email: subject, text and HTML parts, escaping, mailto links, notices."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from email.message import EmailMessage
from html.parser import HTMLParser
from urllib.parse import parse_qs, unquote, urlsplit

from bot.email.render import (
    Envelope,
    already_answered_text,
    closed_text,
    escape_text,
    problem_text,
    question_subject,
    render_html,
    render_notice,
    render_question_email,
    render_text,
)
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem

from .samples import DATABASE, FEATURES, ONE, PLAN, THREE

TAG = "[#abcdefghijklmnopqrst]"
REPLY_TO = "bot+abcdefghijklmnopqrst@example.org"


def envelope(subject: str = f"[handraise] Database {TAG}") -> Envelope:
    return Envelope(
        sender="handraise <bot@example.org>",
        to=["alice@example.org", "bob@example.org"],
        reply_to=REPLY_TO,
        message_id="<hr.abcdefghijklmnopqrst.1@example.org>",
        subject=subject,
    )


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")


def links(html: str) -> Links:
    parser = Links()
    parser.feed(html)
    return parser


def test_the_subject_uses_the_header_and_carries_the_tag() -> None:
    assert question_subject([DATABASE], TAG) == f"[handraise] Database {TAG}"
    assert question_subject([FEATURES], TAG) == f"[handraise] Which features go into the first release? {TAG}"


def test_a_long_subject_is_trimmed_to_one_line() -> None:
    long = AskUserQuestionItem(id="x", question="word " * 60 + "\nsecond line")
    subject = question_subject([long], TAG)
    assert subject.endswith(f"… {TAG}") and "\n" not in subject and len(subject) < 110


def test_the_mail_is_multipart_alternative_with_text_then_html() -> None:
    message = render_question_email(ONE, envelope())
    assert message.get_content_type() == "multipart/alternative"
    kinds = [part.get_content_type() for part in message.iter_parts()]
    assert kinds == ["text/plain", "text/html"]
    assert message["Reply-To"] == REPLY_TO
    assert message["Message-ID"] == "<hr.abcdefghijklmnopqrst.1@example.org>"
    assert message["X-Auto-Response-Suppress"] == "All"
    assert message["Auto-Submitted"] is None  # the question is not an automatic reply


def test_the_mail_survives_a_round_trip_through_bytes() -> None:
    message = render_question_email(THREE, envelope())
    again = message_from_bytes(message.as_bytes(), policy=policy.default)
    assert isinstance(again, EmailMessage)
    body = again.get_body(("plain",))
    assert body is not None and "Which features go into the first release?" in body.get_content()


def test_the_text_numbers_questions_and_options_with_descriptions() -> None:
    text = render_text(THREE)
    assert "1. [Database]" in text and "2. Which features" in text and "3. Approve the migration plan?" in text
    assert "     1. Postgres (Recommended) - Mature, and already in use by two services" in text
    assert "Choose one or more:" in text
    assert "1: 1\n    2: 1, 2\n    3: APPROVE" in text


def test_one_question_is_not_numbered_and_gets_one_example() -> None:
    text = render_text(ONE)
    assert text.startswith("An agent asks:\n\n[Database]\nWhich database")
    assert "How to answer: reply with the number or the name of one option" in text
    assert "\n    1\n" in text


def test_plan_review_shows_the_plan_then_how_to_approve() -> None:
    text = render_text(QuestionRecord(questions=[PLAN]))
    plan = text.index("| 1. Freeze writes")
    assert plan < text.index("Reply APPROVE to approve, or write what to change.")
    assert "    APPROVE" in text


def test_agent_text_cannot_become_markup() -> None:
    evil = AskUserQuestionItem.model_validate(
        {
            "id": "x",
            "question": '<script>alert(1)</script><a href="https://evil.example">click</a>',
            "detail": "<img src=x onerror=alert(1)>",
            "options": [{"label": "<b>bold</b>", "description": '"><iframe src=//evil.example>'}],
        }
    )
    html = render_html(QuestionRecord(questions=[evil]), reply_to=REPLY_TO, subject="s")
    parsed = links(html)
    assert not parsed.tags & {"script", "img", "iframe", "b"}
    assert all(href.startswith("mailto:") for href in parsed.hrefs)
    assert "&lt;script&gt;" in html


def test_urls_and_addresses_in_agent_text_are_defused_against_auto_linking() -> None:
    defused = escape_text("see https://evil.example/x or mail me@evil.example")
    assert "https://evil.example" not in defused and "me@evil.example" not in defused
    assert defused.replace("&#8288;", "") == "see https://evil.example/x or mail me@evil.example"


def test_each_option_has_a_mailto_link_that_prefills_the_reply() -> None:
    html = render_html(ONE, reply_to=REPLY_TO, subject=f"[handraise] Database {TAG}")
    hrefs = links(html).hrefs
    assert len(hrefs) == 3
    url = urlsplit(hrefs[1])
    assert url.scheme == "mailto" and unquote(url.path) == REPLY_TO
    query = parse_qs(url.query)
    assert query["body"] == ["2"] and query["subject"] == [f"Re: [handraise] Database {TAG}"]


def test_with_several_questions_a_mailto_body_names_its_question() -> None:
    hrefs = links(render_html(THREE, reply_to=REPLY_TO, subject="s")).hrefs
    bodies = [parse_qs(urlsplit(href).query)["body"][0] for href in hrefs]
    assert bodies[:3] == ["1: 1", "1: 2", "1: 3"] and bodies[3] == "2: 1"


def test_the_html_is_dark_mode_safe() -> None:
    html = render_html(THREE, reply_to=REPLY_TO, subject="s")
    assert 'name="color-scheme" content="light dark"' in html
    assert "background" not in html and "<style" not in html and "<img" not in html
    assert not re.search(r"(?<!-)color:\s*#(?:000|fff)", html)


def test_a_follow_up_shows_only_the_open_questions_with_their_numbers() -> None:
    text = render_text(THREE, only={"features"}, intro="Still open:")
    assert text.startswith("Still open:") and "2. Which features" in text
    assert "Which database" not in text and "Approve the migration" not in text
    assert "    1, 2" in text  # one question left: a bare answer is for it


def test_a_notice_is_an_automatic_plain_text_mail_in_the_thread() -> None:
    notice = render_notice(
        "Thanks",
        Envelope(
            sender="handraise <bot@example.org>",
            to=["alice@example.org"],
            reply_to=REPLY_TO,
            message_id="<hr.abcdefghijklmnopqrst.2@example.org>",
            subject="Re: x",
            in_reply_to="<reply@client>",
            references=["<hr.abcdefghijklmnopqrst.1@example.org>", "<reply@client>"],
            automatic=True,
        ),
    )
    assert notice.get_content_type() == "text/plain"
    assert notice["Auto-Submitted"] == "auto-replied" and notice["In-Reply-To"] == "<reply@client>"
    assert notice["References"] == "<hr.abcdefghijklmnopqrst.1@example.org> <reply@client>"


def test_already_answered_names_who_and_when() -> None:
    answered = ONE.model_copy(
        update={
            "status": "answered",
            "answered_by": "bob@example.org",
            "answered_via": "slack",
            "resolved_at": ONE.created_at,
            "answer": AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="db", selected=["SQLite"])]),
        }
    )
    text = already_answered_text(answered, "alice@example.org")
    assert "already answered by bob@example.org via slack at" in text and "-> SQLite" in text
    assert "already answered by you" in already_answered_text(answered, "BOB@example.org")


def test_closed_texts_say_no_longer_needed_or_expired() -> None:
    cancelled = ONE.model_copy(update={"status": "cancelled", "resolved_at": ONE.created_at})
    expired = ONE.model_copy(
        update={"status": "expired", "resolved_at": ONE.created_at, "error_message": "nobody answered within 2h"}
    )
    assert "no longer needed" in closed_text(cancelled)
    assert "expired" in closed_text(expired) and "nobody answered within 2h" in closed_text(expired)


def test_a_problem_reply_names_the_problem_and_the_accepted_forms() -> None:
    text = problem_text(ONE, ["there is no option 7; the options are numbered 1 to 3"], {"db"})
    assert "there is no option 7" in text and "How to answer" in text and '"#2"' in text
