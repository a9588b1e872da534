"""Reading what people do in Discord, and what the bot would send, on garbage, oversize and hostile input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.channels.replies import ReplyError
from bot.discord.parse import Chosen, Picked, Press, Stale, WantsWords, decide, modal_words, read_press, read_words
from bot.discord.render import (
    MAX_TEXT,
    controls,
    escape,
    render_modal,
    render_outcome,
    render_question,
)
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem, AskUserQuestionOption


def question(*labels: str, multi: bool = False, **fields: object) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label=label) for label in labels] or None
    return AskUserQuestionItem.model_validate(
        {"id": "q", "question": "Deploy where?", "options": options, "multi_select": multi} | fields
    )


def record(*questions: AskUserQuestionItem) -> QuestionRecord:
    return QuestionRecord(
        id="hq_1", status="pending", questions=list(questions), created_at=datetime(2026, 12, 6, tzinfo=UTC)
    )


@pytest.mark.parametrize(
    "custom_id",
    [
        None,
        7,
        "",
        "hr",
        "hr:p:0",
        "hr:x:0",
        "hr:z:0",
        "hr:p:0:1:2",
        "hr:w:999",
        "hr:p:0:" + "9" * 30,
        "hr:p:\u0660:1",
        "HR:p:0:1",
        "hr:w:0\n",
        " hr:w:0",
        "hr:u:0:5",
    ],
)
def test_a_custom_id_that_is_not_ours_reads_as_none(custom_id: object) -> None:
    assert read_press(custom_id) is None


def test_a_custom_id_of_ours_reads_back() -> None:
    assert read_press("hr:p:3:4") == Press("p", 3, "4")
    assert read_press("hr:x:0:1300000000000000001") == Press("x", 0, "1300000000000000001")


@given(st.text(max_size=200))
def test_read_press_never_raises(text: str) -> None:
    read_press(text)


def test_a_press_on_an_option_that_is_not_there_answers_nothing() -> None:
    asked = record(question("A", "B"))
    assert isinstance(decide(Press("p", 0, "7"), asked, [], None, None), Stale)
    assert isinstance(decide(Press("p", 1, "0"), asked, [], None, None), Stale)  # another question's control
    assert isinstance(decide(Press("s", 0), asked, ["0", "1"], None, None), Stale)  # two picks for a single select
    assert isinstance(decide(Press("s", 0), asked, ["-1"], None, None), Stale)
    assert isinstance(decide(Press("s", 0), asked, ["x" * 5000], None, None), Stale)
    assert isinstance(decide(Press("m", 0), asked, ["0"], None, None), Stale)  # not a multi-select
    assert isinstance(decide(Press("w", 0), asked, [], None, None), WantsWords)


def test_multi_select_picks_then_submits_in_the_options_order() -> None:
    asked = record(question("A", "B", "C", multi=True))
    assert decide(Press("m", 0), asked, ["2", "0"], None, None) == Picked(("C", "A"))
    chosen = decide(Press("u", 0), asked, [], None, ("C", "A"))
    assert isinstance(chosen, Chosen) and chosen.item.selected == ["A", "C"]
    with pytest.raises(ReplyError, match="Choose at least one"):
        decide(Press("u", 0), asked, [], None, None)
    assert isinstance(decide(Press("m", 0), asked, ["0", "0"], None, None), Stale)


def test_modal_words_are_the_persons_own_and_bounded() -> None:
    asked = record(question("A", "B"))
    chosen = decide(Press("x", 0, "1"), asked, [], "  roll back  ", None)
    assert isinstance(chosen, Chosen) and chosen.item.custom == "roll back" and chosen.item.selected == []
    with pytest.raises(ReplyError):
        decide(Press("x", 0, "1"), asked, [], "   ", None)
    with pytest.raises(ReplyError):
        decide(Press("x", 0, "1"), asked, [], "x" * 4001, None)


@pytest.mark.parametrize(
    "data", [None, [], "x", {"components": "x"}, {"components": [1, None, {"components": [{"custom_id": "words"}]}]}]
)
def test_a_modal_submit_without_our_input_has_no_words(data: object) -> None:
    assert modal_words(data) is None


def test_thread_reply_words() -> None:
    asked = question("Staging", "Production")
    assert read_words("2", asked).selected == ["Production"]
    assert read_words(" production ", asked).selected == ["Production"]
    assert read_words("neither", asked).custom == "neither"
    for bad in ("", "   ", "3", "0", "1 2", "x" * 4001):
        with pytest.raises(ReplyError):
            read_words(bad, asked)
    assert read_words("1, 2", question("A", "B", multi=True)).selected == ["A", "B"]
    assert read_words("42", question()).custom == "42"  # no options: a number is just words


def test_agent_text_cannot_ping_link_or_format() -> None:
    hostile = "@everyone <@123> <@&456> **bold** [link](https://x.example) `code` ||spoiler||"
    shown = render_question(record(question("A", question=hostile))).content
    assert "@everyone" not in shown.replace("\\@everyone", "")
    assert "<@123>" not in shown and "<@&456>" not in shown and "**bold**" not in shown
    assert escape("<@1>") == "\\<\\@1\\>"


def test_oversize_questions_stay_within_discords_limits() -> None:
    labels = [f"{n} " + "very long option label " * 8 for n in range(25)]
    huge = question(*labels, question="Q" * 10_000, header="H" * 500, detail="D" * 800)
    message = render_question(record(huge))
    assert len(message.content) <= MAX_TEXT
    (select,) = message.components[0]["components"]
    assert select["type"] == 3 and all(len(option["label"]) <= 100 for option in select["options"])
    modal = render_modal(huge, 0, "1300000000000000001")
    assert len(modal["title"]) <= 45 and len(modal["components"][0]["components"][0]["placeholder"]) <= 100
    assert len(render_outcome(record(huge)).content) <= MAX_TEXT


def test_a_huge_plan_is_attached_rather_than_split_into_many_messages() -> None:
    plan = question(
        "Approve", "Request changes", detail="step\n" * 5000, intent={"kind": "plan-review", "approve": "Approve"}
    )
    message = render_question(record(plan))
    assert message.file is not None and message.file[0] == "detail.md" and len(message.parts) == 1
    assert [b["label"] for b in message.components[0]["components"]] == ["Approve"]
    assert message.components[1]["components"][0]["label"] == "Request changes…"


def test_five_options_are_buttons_and_six_a_select() -> None:
    five = controls(question(*"ABCDE"), 0)
    assert [item["type"] for item in five[0]["components"]] == [2] * 5
    six = controls(question(*"ABCDEF"), 0)
    assert six[0]["components"][0]["type"] == 3


def test_a_multi_select_with_one_option_is_a_button_that_answers() -> None:
    asked = record(question("Only", multi=True))
    assert controls(asked.questions[0], 0)[0]["components"][0]["custom_id"] == "hr:p:0:0"
    chosen = decide(Press("p", 0, "0"), asked, [], None, None)
    assert isinstance(chosen, Chosen) and chosen.item.selected == ["Only"]
