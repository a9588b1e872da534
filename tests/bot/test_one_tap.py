"""A tap's choice read as an answer (the kit's `choosing`, used by ntfy and Web Push): the option it names, and a
clear refusal for a question or option the request does not have, never an index error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.channels.one_tap import choosing
from bot.channels.replies import ReplyError
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionItem

RECORD = QuestionRecord(
    id="q_1",
    questions=[
        AskUserQuestionItem.model_validate(
            {"id": "a", "question": "Ship?", "options": [{"label": "Yes"}, {"label": "No"}]}
        ),
        AskUserQuestionItem.model_validate({"id": "b", "question": "Why?"}),
    ],
    status="pending",
    created_at=datetime.now(UTC),
)
DELIVERY = Delivery(question_id="q_1", channel="ntfy", key="q_1")


def test_a_choice_answers_with_its_option_label() -> None:
    answer = choosing(0, 1)(RECORD, DELIVERY)
    assert answer is not None
    assert answer.items["a"].selected == ["No"]


@pytest.mark.parametrize(("index", "option"), [(2, 0), (-1, 0), (0, 2), (0, -1), (1, 0)])
def test_a_choice_the_request_does_not_have_is_refused(index: int, option: int) -> None:
    with pytest.raises(ReplyError, match="open the question instead"):
        choosing(index, option)(RECORD, DELIVERY)
