"""Wire types: camelCase on the wire, snake_case in Python, lossless JSON round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)

text = st.text(max_size=40)
options = st.builds(AskUserQuestionOption, label=text, description=st.none() | text)
items = st.builds(
    AskUserQuestionItem,
    id=text,
    question=text,
    detail=st.none() | text,
    header=st.none() | text,
    options=st.none() | st.lists(options, max_size=5),
    multi_select=st.booleans(),
    intent=st.none()
    | st.builds(AskUserQuestionIntent, kind=st.just("plan-review"), approve=text, reject=st.none() | text),
)
answers = st.builds(
    AskUserQuestionAnswer,
    answers=st.lists(
        st.builds(AskUserQuestionAnswerItem, id=text, selected=st.lists(text, max_size=4), custom=st.none() | text),
        max_size=5,
    ),
)


@given(items)
def test_question_round_trips_through_wire_json(item: AskUserQuestionItem) -> None:
    wire = json.dumps(item.to_wire())
    assert AskUserQuestionItem.model_validate_json(wire) == item
    assert "multi_select" not in item.to_wire()  # a key; an option may well be labelled "multi_select"


@given(answers)
def test_answer_round_trips_through_wire_json(answer: AskUserQuestionAnswer) -> None:
    assert AskUserQuestionAnswer.model_validate(json.loads(json.dumps(answer.to_wire()))) == answer


def test_the_wire_uses_camel_case_and_omits_absent_fields() -> None:
    item = AskUserQuestionItem(id="a", question="Q?", multi_select=True)
    assert item.to_wire() == {"id": "a", "question": "Q?", "multiSelect": True}


def test_both_spellings_are_accepted_on_input() -> None:
    camel = AskUserQuestionItem.model_validate({"id": "a", "question": "Q?", "multiSelect": True})
    snake = AskUserQuestionItem.model_validate({"id": "a", "question": "Q?", "multi_select": True})
    assert camel == snake and camel.multi_select


def test_an_unknown_intent_kind_is_rejected() -> None:
    with pytest.raises(ValidationError):
        AskUserQuestionIntent.model_validate({"kind": "diff-preview", "approve": "Yes"})


def test_a_request_takes_questions_as_dicts_and_keeps_them_off_the_wire_with_agent() -> None:
    req = AskUserQuestionRequest(questions=[{"id": "a", "question": "Q?"}])  # type: ignore[list-item]
    assert isinstance(req.questions[0], AskUserQuestionItem)
    assert req.questions_wire() == [{"id": "a", "question": "Q?", "multiSelect": False}]


def test_a_request_refuses_an_agent_that_is_not_an_agent() -> None:
    with pytest.raises(ValidationError):
        AskUserQuestionRequest(questions=[], agent="coder")  # type: ignore[arg-type]


def test_models_are_frozen() -> None:
    item = AskUserQuestionItem(id="a", question="Q?")
    with pytest.raises(ValidationError):
        item.id = "b"  # type: ignore[misc]
