"""Reading taps and replies, pure: keys, stale and forged taps, words, numbers and labels, prompts."""

from __future__ import annotations

import pytest

from bot.store.records import QuestionRecord
from bot.telegram import keys
from bot.telegram.parse import (
    Chosen,
    ReplyError,
    Stale,
    Toggled,
    WantsWords,
    decide,
    read_prompt_ref,
    read_words,
)
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption

SINGLE = AskUserQuestionItem(
    id="env", question="Where?", options=[AskUserQuestionOption(label="Staging"), AskUserQuestionOption(label="Prod")]
)
MULTI = SINGLE.model_copy(update={"id": "many", "multi_select": True})
FREE = AskUserQuestionItem(id="free", question="Name?")


def record(*questions: AskUserQuestionItem, **fields: object) -> QuestionRecord:
    return QuestionRecord.model_validate({"questions": list(questions)} | fields)


@pytest.mark.parametrize(
    "data",
    [None, 5, "", "p", "p:0", "p:a:b", "p:0:0:0", "t:0:0", "t:0:0:xyz", "s:0", "w:", "p:0:0\n", "p:1234:0", "é" * 40],
)
def test_anything_but_our_keys_reads_as_nothing(data: object) -> None:
    assert keys.read_tap(data) is None


def test_an_oversize_key_reads_as_nothing() -> None:
    assert keys.read_tap("t:0:0:" + "f" * 100) is None


def test_our_keys_read_back() -> None:
    assert keys.read_tap(keys.pick(2, 3)) == keys.Tap("pick", 2, 3)
    assert keys.read_tap(keys.toggle(1, 4, 0b1010)) == keys.Tap("toggle", 1, 4, 0b1010)
    assert keys.read_tap(keys.submit(0, 5)) == keys.Tap("submit", 0, mask=5)
    assert keys.read_tap(keys.write(7)) == keys.Tap("write", 7)


def test_a_pick_answers_the_current_question() -> None:
    decision = decide(keys.Tap("pick", 0, 1), record(SINGLE))
    assert decision == Chosen(0, AskUserQuestionAnswerItem(id="env", selected=["Prod"]))


def test_a_pick_on_an_answered_question_of_a_batch_is_stale() -> None:
    partial = {"env": AskUserQuestionAnswerItem(id="env", selected=["Prod"])}
    assert isinstance(decide(keys.Tap("pick", 0, 0), record(SINGLE, FREE, partial=partial)), Stale)


@pytest.mark.parametrize(
    "tap",
    [
        keys.Tap("pick", 0, 2),  # no such option
        keys.Tap("pick", 1, 0),  # no such question
        keys.Tap("toggle", 0, 0, 0),  # a toggle on a single-select question
        keys.Tap("submit", 0, mask=1),
    ],
)
def test_forged_taps_on_a_single_select_question_are_stale(tap: keys.Tap) -> None:
    assert isinstance(decide(tap, record(SINGLE)), Stale)


def test_a_toggle_flips_its_option_in_the_mask() -> None:
    assert decide(keys.Tap("toggle", 0, 1, 0b01), record(MULTI)) == Toggled(0b11)
    assert decide(keys.Tap("toggle", 0, 0, 0b01), record(MULTI)) == Toggled(0)


def test_a_mask_naming_options_that_do_not_exist_is_stale() -> None:
    assert isinstance(decide(keys.Tap("submit", 0, mask=0b100), record(MULTI)), Stale)
    assert isinstance(decide(keys.Tap("toggle", 0, 5, 0), record(MULTI)), Stale)


def test_submit_answers_with_the_ticked_options_in_order() -> None:
    decision = decide(keys.Tap("submit", 0, mask=0b11), record(MULTI))
    assert decision == Chosen(0, AskUserQuestionAnswerItem(id="many", selected=["Staging", "Prod"]))


def test_submit_with_nothing_ticked_answers_with_nothing_chosen() -> None:
    decision = decide(keys.Tap("submit", 0, mask=0), record(MULTI))
    assert decision == Chosen(0, AskUserQuestionAnswerItem(id="many", selected=[]))


def test_write_asks_for_words() -> None:
    assert decide(keys.Tap("write", 0), record(FREE)) == WantsWords(0)


def test_words_are_the_custom_answer() -> None:
    assert read_words("  Aurora  ", FREE) == AskUserQuestionAnswerItem(id="free", selected=[], custom="Aurora")


def test_a_number_or_an_exact_label_chooses_an_option() -> None:
    assert read_words("2", SINGLE).selected == ["Prod"]
    assert read_words("staging", SINGLE).selected == ["Staging"]


def test_several_numbers_choose_several_options_of_a_multi_select() -> None:
    assert read_words("2, 1", MULTI).selected == ["Prod", "Staging"]
    assert read_words("1 2 1", MULTI).selected == ["Staging", "Prod"]


@pytest.mark.parametrize(
    ("text", "question", "problem"),
    [
        ("", FREE, "empty"),
        ("   \n", FREE, "empty"),
        ("3", SINGLE, "1 to 2"),
        ("0", SINGLE, "1 to 2"),
        ("1, 2", SINGLE, "takes one option"),
        ("x" * 4097, FREE, "longer than 4096"),
    ],
)
def test_unreadable_words_say_what_to_send(text: str, question: AskUserQuestionItem, problem: str) -> None:
    with pytest.raises(ReplyError, match=problem):
        read_words(text, question)


def test_numbers_in_a_question_without_options_are_words() -> None:
    assert read_words("42", FREE).custom == "42"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("✏️ Reply …\nref 123/2", (123, 1)),
        ("⏰ Reminder\nref 9/0", (9, None)),
        ("ref 123/2", None),
        ("✏️ Reply\nref 123/2 trailing", None),
        ("✏️ Reply\nref abc/1", None),
        (None, None),
        ("x\nref 1234567890123/1", None),
    ],
)
def test_a_prompt_names_its_question(text: object, found: tuple[int, int | None] | None) -> None:
    assert read_prompt_ref(text) == found
