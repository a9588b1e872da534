"""An answer item is put in the design's shape for its question before it is recorded, whichever channel read it."""

from __future__ import annotations

import pytest

from bot.questions.answers import AnswerError, normalise_answer, normalise_item
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

SINGLE = AskUserQuestionItem.model_validate(
    {"id": "env", "question": "Where?", "options": [{"label": "staging"}, {"label": "production"}]}
)
MULTI = SINGLE.model_copy(update={"id": "regions", "multi_select": True})


def test_an_item_already_in_shape_is_kept_as_it_is() -> None:
    given = AskUserQuestionAnswerItem(id="env", selected=["staging"])
    assert normalise_item(SINGLE, given) is given


def test_free_text_is_trimmed_and_overrides_the_choice_of_a_single_choice_question() -> None:
    given = AskUserQuestionAnswerItem(id="env", selected=["staging"], custom="  canary  ")
    assert normalise_item(SINGLE, given) == AskUserQuestionAnswerItem(id="env", custom="canary")


def test_blank_free_text_counts_as_none_and_repeated_labels_count_once() -> None:
    given = AskUserQuestionAnswerItem(id="regions", selected=["staging", "staging"], custom="   ")
    assert normalise_item(MULTI, given) == AskUserQuestionAnswerItem(id="regions", selected=["staging"])


def test_the_item_takes_the_id_of_the_question_it_answers() -> None:
    answer = normalise_answer([SINGLE], {"env": AskUserQuestionAnswerItem(id="other", selected=["production"])})
    assert answer.answers == [AskUserQuestionAnswerItem(id="env", selected=["production"])]


def test_a_label_that_is_not_an_option_is_refused() -> None:
    with pytest.raises(AnswerError, match="not one of its options"):
        normalise_item(SINGLE, AskUserQuestionAnswerItem(id="env", selected=["prod"]))
