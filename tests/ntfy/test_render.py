"""The publish body and the cut, on their own: text verbatim, within ntfy's 4,096 bytes, the start shown."""

from __future__ import annotations

import pytest

from bot.ntfy.render import MAX_MESSAGE_BYTES, cut_bytes, render_question, tappable
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption


def record(text: str, labels: list[str], **more: object) -> QuestionRecord:
    options = [AskUserQuestionOption(label=label) for label in labels]
    item = AskUserQuestionItem.model_validate({"id": "q1", "question": text, "options": options} | more)
    return QuestionRecord(questions=[item], agent=AgentRef(id="a\x1b]0;x\x07", name=None))


def test_control_characters_and_markup_are_sent_verbatim() -> None:
    text = "\x1b[31mred\x07 **bold** <b>x</b>\x00"
    body = render_question(record(text, ["\x1b[1mYes", "No"]), "t", "https://h.example", lambda i, o: f"{i}.{o}")
    assert body["message"] == text
    assert [action["label"] for action in body["actions"]] == ["\x1b[1mYes", "No"]
    assert "markdown" not in body


@pytest.mark.parametrize("unit", ["a", "é", "🚀", "\u0301"])
def test_a_long_message_is_cut_at_a_character_with_its_start_shown(unit: str) -> None:
    text = "start " + unit * 5000
    cut = cut_bytes(text, MAX_MESSAGE_BYTES)
    assert len(cut.encode("utf-8")) <= MAX_MESSAGE_BYTES
    assert cut.startswith("start ") and cut.endswith("…")
    assert text.startswith(cut[:-1])


def test_a_plan_review_that_needs_words_is_not_offered_as_taps() -> None:
    intent = AskUserQuestionIntent(kind="plan-review", approve="Approve")
    assert not tappable(record("Plan?", ["Approve", "Request changes"], intent=intent))
    deny = AskUserQuestionIntent(kind="plan-review", approve="Approve", reject="Deny…")
    assert tappable(record("Plan?", ["Approve", "Deny…"], intent=deny))  # a tap on "Deny…" is a plain deny
