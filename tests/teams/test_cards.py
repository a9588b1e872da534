"""The cards and what people send back, read without a network: every card within Teams' size, and every press,
choice and reply read or refused, garbage included."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.channels.replies import ReplyError
from bot.store.records import AgentRef, QuestionRecord
from bot.teams.cards import (
    BUDGET,
    INPUT_CHOICE,
    INPUT_WORDS,
    MARK,
    RenderError,
    fits,
    person,
    render_outcome,
    render_question,
)
from bot.teams.connector import body_bytes
from bot.teams.parse import Chosen, Press, Stale, decide, plain_text, read_press, read_words
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption

from .questions import checks, choice, free, many, plan


def record(*questions: AskUserQuestionItem, **fields: Any) -> QuestionRecord:
    agent = AgentRef(id="deploy-7", name="deploy-bot")
    return QuestionRecord(id="q_1", agent=agent, questions=list(questions), **fields)


def card_of(activity: dict[str, Any]) -> dict[str, Any]:
    return activity["attachments"][0]["content"]


def test_a_huge_request_still_fits_in_teams_limit() -> None:
    options = [AskUserQuestionOption(label=f"{'L' * 300} {number}", description="d" * 2000) for number in range(100)]
    huge = AskUserQuestionItem(id="big", question="Q" * 30_000, detail="é" * 50_000, options=options)
    activity = render_question(record(huge))
    assert len(body_bytes(activity)) <= BUDGET
    assert card_of(activity)["body"][1]["text"].startswith("QQQ")


@settings(max_examples=30, deadline=None)
@given(
    text=st.text(min_size=1, max_size=3000),
    detail=st.text(max_size=40_000),
    labels=st.lists(st.text(min_size=1, max_size=200), min_size=0, max_size=30, unique=True),
)
def test_any_question_renders_within_the_budget(text: str, detail: str, labels: list[str]) -> None:
    question = AskUserQuestionItem(
        id="q", question=text, detail=detail or None, options=[AskUserQuestionOption(label=x) for x in labels] or None
    )
    assert fits(render_question(record(question)))


def test_ten_long_answered_questions_fit_as_an_outcome() -> None:
    questions = [AskUserQuestionItem(id=f"q{n}", question="W" * 5000, detail="x" * 9000) for n in range(10)]
    answers = [AskUserQuestionAnswerItem(id=f"q{n}", selected=[], custom="y" * 4000) for n in range(10)]
    done = record(*questions, status="answered", answer=AskUserQuestionAnswer(answers=answers), answered_by="a@b.c")
    assert fits(render_outcome(done))


def test_too_many_questions_or_options_cannot_be_shown() -> None:
    with pytest.raises(RenderError):
        render_question(record(*[free().model_copy(update={"id": f"q{n}"}) for n in range(11)]))
    with pytest.raises(RenderError):
        render_question(record(many(101)))


def test_six_options_turn_into_a_choice_set() -> None:
    assert [a["type"] for a in card_of(render_question(record(many(5))))["actions"]].count("Action.Execute") == 5
    card = card_of(render_question(record(many(6))))
    assert [a["title"] for a in card["actions"]] == ["Submit", "Other…"]


def test_a_free_text_question_has_its_field_in_the_card() -> None:
    card = card_of(render_question(record(free())))
    assert [item["type"] for item in card["body"]][-1] == "Input.Text"
    assert [a["title"] for a in card["actions"]] == ["Submit"]


def test_an_answered_card_never_shows_a_raw_teams_id() -> None:
    assert person("29:1abcdef", "teams", {}) == "someone in Teams"
    assert person("aaaaaaaa-0000-4000-8000-000000000001", "teams", {}) == "someone in Teams"
    assert person("alice@example.org", "teams", {"alice@example.org": "Alice"}) == "Alice"
    assert person("alice@example.org", "teams", {}) == "alice@example.org"
    assert person("U123", "slack", {}) == "U123 via slack"


def test_the_outcome_says_when_in_hours_and_minutes() -> None:
    when = datetime(2026, 12, 6, 9, 5, tzinfo=UTC)
    answer = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="env", selected=["Staging"])])
    done = record(
        choice(), status="answered", answer=answer, answered_by="a@b.c", answered_via="teams", resolved_at=when
    )
    assert "2026-12-06 09:05 UTC" in card_of(render_outcome(done))["body"][-1]["text"]


# --- presses ----------------------------------------------------------------------------------------------------------


def data(**fields: Any) -> dict[str, Any]:
    return {MARK: "q_1", "q": 0, "verb": "pick", "o": 1} | fields


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        "text",
        [],
        {},
        data(verb="delete"),
        data(o=None),
        data(o=-1),
        data(o=True),
        data(q="0"),
        data(q=10_000),
        {MARK: "", "q": 0, "verb": "pick", "o": 0},
        {MARK: "x" * 101, "q": 0, "verb": "pick", "o": 0},
        {MARK: 7, "q": 0, "verb": "pick", "o": 0},
    ],
)
def test_data_that_is_not_a_handraise_press_is_ignored(garbage: object) -> None:
    assert read_press(garbage) is None


def test_a_press_is_read_against_the_question_as_it_is_now() -> None:
    asked = record(choice())
    press = read_press(data())
    assert isinstance(press, Press)
    decision = decide(press, asked)
    assert isinstance(decision, Chosen) and decision.item.selected == ["Production"]
    assert isinstance(decide(Press("q_1", 0, "pick", option=9), asked), Stale)
    assert isinstance(decide(Press("q_1", 1, "pick", option=0), asked), Stale)


@pytest.mark.parametrize("value", ["", " ", "9", "0,9", "a", "1;2", "-1", ",".join(["0"] * 101)])
def test_a_choice_that_names_no_option_is_refused(value: str) -> None:
    with pytest.raises(ReplyError):
        decide(Press("q_1", 0, "choose", choice=value), record(checks()))


def test_one_question_takes_one_choice_and_repeats_count_once() -> None:
    with pytest.raises(ReplyError):
        decide(Press("q_1", 0, "choose", choice="0,1"), record(many(8)))
    decision = decide(Press("q_1", 0, "choose", choice="2,2,0"), record(checks()))
    assert isinstance(decision, Chosen) and decision.item.selected == ["Docs", "Unit tests"]


@pytest.mark.parametrize("words", [None, "", "   ", "x" * 4001])
def test_words_that_are_empty_or_oversize_are_refused(words: str | None) -> None:
    with pytest.raises(ReplyError):
        decide(Press("q_1", 0, "words", words=words), record(plan()))


def test_inputs_come_with_the_press() -> None:
    press = read_press(data(verb="words", **{INPUT_WORDS: "Back up twice", INPUT_CHOICE: 5}))
    assert press is not None and press.words == "Back up twice" and press.choice is None


# --- thread replies ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("<at>handraise</at> 2", "2"),
        ('<p><at id="0">handraise</at>&nbsp;2</p>', "2"),
        ("<div>one<br>two</div>", "one\ntwo"),
        ("a &lt;b&gt; &amp; c", "a <b> & c"),
        ("<script>alert(1)</script>x", "alert(1)x"),
        ("<at>x" + "y" * 10_000, "x" + "y" * 10_000),
    ],
)
def test_mentions_and_html_are_taken_out_of_a_reply(text: str, plain: str) -> None:
    assert plain_text(text) == plain


def test_numbers_pick_options_and_other_words_are_the_answer() -> None:
    assert read_words("2", choice()).selected == ["Production"]
    assert read_words("staging", choice()).selected == ["Staging"]
    assert read_words("1, 3", checks()).selected == ["Unit tests", "Docs"]
    assert read_words("ship it tomorrow", choice()).custom == "ship it tomorrow"
    assert read_words("2", free()).custom == "2"


@pytest.mark.parametrize("text", ["", "<at>handraise</at>", "   ", "7", "1 2", "y" * 20_000])
def test_a_reply_that_cannot_be_read_says_why(text: str) -> None:
    with pytest.raises(ReplyError):
        read_words(text, choice())
