"""The inbox's HTML: agent text never becomes markup, every field has a label, nothing inline for the CSP to block."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from bot.store.records import AgentRef, QuestionRecord
from bot.web.markdown import render_markdown
from bot.web.render import Card, render_card, render_history, render_inbox, render_outcome, render_partial_note
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem
from tests.web.helpers import choice, item, options, plan

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer sees them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def named(self, *names: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.tags if tag in names]


def hostile_record() -> QuestionRecord:
    return QuestionRecord(
        agent=AgentRef(id=HOSTILE, name=HOSTILE, labels={HOSTILE: HOSTILE}),
        questions=[
            item(
                "a",
                question=HOSTILE,
                header=HOSTILE,
                detail=HOSTILE,
                options=[{"label": HOSTILE, "description": HOSTILE}, {"label": "fine"}],
            ),
            item(
                "b",
                question=HOSTILE,
                detail=f"# Plan\n\n{HOSTILE}\n\n[click](javascript:alert(3))",
                options=[{"label": HOSTILE}],
                intent={"kind": "plan-review", "approve": HOSTILE},
            ),
        ],
    )


def test_hostile_agent_text_is_escaped_everywhere_on_the_card() -> None:
    page = render_card(Card(hostile_record(), values={"q0.other": [HOSTILE], "by": [HOSTILE]}), csrf="c")
    elements = Elements(page)
    assert not elements.named("script", "img")
    assert all(not name.startswith("on") for _, attrs in elements.tags for name in attrs)
    assert all("javascript" not in (attrs.get("href") or "") for attrs in elements.named("a"))
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page


def test_hostile_answers_are_escaped_in_outcomes_and_history() -> None:
    record = hostile_record().model_copy(
        update={
            "status": "answered",
            "answered_by": HOSTILE,
            "answered_via": "web",
            "answer": AskUserQuestionAnswer(
                answers=[
                    AskUserQuestionAnswerItem(id="a", selected=[HOSTILE], custom=HOSTILE),
                    AskUserQuestionAnswerItem(id="b", selected=[HOSTILE]),
                ]
            ),
        }
    )
    for page in (render_outcome(record), render_history([(record, [])])):
        assert [attrs["src"] for attrs in Elements(page).named("script", "img")] in ([], ["/static/inbox.js"])


def test_plan_markdown_is_rendered_without_raw_html_or_script_links() -> None:
    html = render_markdown(
        "## Steps\n\n1. **migrate**\n\n<b onclick=x>raw</b> [a](javascript:alert(1)) [b](https://example.org) "
        "![i](http://x/i.png)"
    )
    assert "<h2>Steps</h2>" in html and "<strong>migrate</strong>" in html
    assert "&lt;b onclick=x&gt;raw&lt;/b&gt;" in html
    links = Elements(html).named("a")
    assert [attrs["href"] for attrs in links] == ["https://example.org"]
    assert links[0]["rel"] == "noopener noreferrer nofollow"
    assert not Elements(html).named("img", "b")


def test_no_inline_script_or_style_anywhere() -> None:
    page = render_inbox([Card(hostile_record()), Card(QuestionRecord(questions=[plan()]))], csrf="c")
    elements = Elements(page)
    assert all(attrs.get("src") for attrs in elements.named("script"))
    assert not elements.named("style")
    assert all("style" not in attrs for _, attrs in elements.tags)


def test_every_field_has_a_label() -> None:
    record = QuestionRecord(questions=[choice(), choice("regions", multi=True), item("why"), plan()])
    page = render_card(Card(record, responders=["alice@example.org"]), csrf="c")
    elements = Elements(page)
    labelled = {attrs["for"] for attrs in elements.named("label")}
    fields = [attrs for attrs in elements.named("input", "textarea") if attrs.get("type") != "hidden"]
    assert fields
    for attrs in fields:
        assert attrs.get("id") in labelled or attrs.get("aria-labelledby") in labelled, attrs


def test_a_lone_plan_review_offers_approve_first_and_enter_cannot_submit_it() -> None:
    page = render_card(Card(QuestionRecord(questions=[plan()])), csrf="c")
    buttons = Elements(page).named("button")
    assert "disabled" in buttons[0]  # the form's default button: Enter in a text field does nothing
    assert buttons[1]["value"] == "0" and "primary" in (buttons[1]["class"] or "")
    assert re.search(r'value="0" class="primary approve">Approve</button>', page)
    assert re.search(r'value="other" class="secondary">Request changes</button>', page)


def test_what_was_typed_comes_back_after_a_refused_submit() -> None:
    card = Card(
        QuestionRecord(questions=[choice("regions", multi=True)]),
        values={"q0": ["1", "other"], "q0.other": ["eu-west"]},
        error="nope",
    )
    page = render_card(card, csrf="c")
    checked = [attrs["value"] for attrs in Elements(page).named("input") if "checked" in attrs]
    assert checked == ["1", "other"]
    assert ">eu-west</textarea>" in page
    assert 'role="alert"' in page and "nope" in page


def test_a_reminded_question_is_marked_in_its_card() -> None:
    record = QuestionRecord(questions=[item()], reminders=2)
    assert "Still waiting for an answer: reminded 2 times." in render_partial_note(record)


def test_a_reject_option_in_a_batch_is_the_words_choice_in_place_of_request_changes() -> None:
    deny = item(
        "perm",
        detail="ls",
        options=options("Allow", "Deny…", "Always allow"),
        intent={"kind": "plan-review", "approve": "Allow", "reject": "Deny…"},
    )
    page = render_card(Card(QuestionRecord(questions=[choice(), deny])), csrf="c")
    assert page.count(">Deny…</span>") == 1 and "Request changes" not in page
    assert 'name="q1" value="other"' in page and 'name="q1" value="1"' not in page
