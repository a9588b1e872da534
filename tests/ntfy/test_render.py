"""The publish body and the cut, on their own: text verbatim, within ntfy's 4,096 bytes, the start shown."""

from __future__ import annotations

import pytest

from bot.ntfy.render import (
    MAX_MESSAGE_BYTES,
    cut_bytes,
    render_progress,
    render_question,
    render_reminder,
    tappable,
)
from bot.store.records import AgentRef, Approval, QuestionRecord
from core import AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption

from .fake_ntfy import problems_in


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


def test_a_reminder_is_the_question_again_with_tokens_of_its_own_and_says_which_reminder() -> None:
    asked = record("Deploy?", ["Yes", "No"]).model_copy(update={"agent": AgentRef(id="d7", name="deploy-bot")})
    first = render_question(asked, "t", "https://h.example", lambda i, o: f"first-{i}.{o}")
    again = render_reminder(asked, "t", "https://h.example", lambda i, o: f"again-{i}.{o}", 2)
    assert again["title"] == "Reminder 2: deploy-bot asks" and again["message"] == first["message"] == "Deploy?"
    assert again["click"] == first["click"] and again["tags"] == ["alarm_clock"]
    assert [action["label"] for action in again["actions"]] == ["Yes", "No"]
    assert [action["body"] for action in again["actions"]] == ['{"tap":"again-0.0"}', '{"tap":"again-0.1"}']
    assert problems_in(again) == []


def test_progress_says_who_approved_and_offers_nothing_to_tap() -> None:
    asked = record("Ship the plan?", ["Approve", "Deny"])
    approved = asked.model_copy(update={"approvals": [Approval(by="alice@example.org", via="ntfy", identity="a")]})
    body = render_progress(approved, "t", "https://h.example", 2)
    assert body["title"] == "1 of 2 approvals: alice@example.org — waiting for more"
    assert body["message"] == "Ship the plan?" and "actions" not in body
    assert body["click"] == f"https://h.example/#card-{asked.id}"
    assert problems_in(body) == []
