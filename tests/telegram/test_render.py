"""The Telegram message, pure: escaping, the 4096-character limit, long details in parts, buttons and their keys."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.store.records import AgentRef, QuestionRecord
from bot.telegram import keys
from bot.telegram.render import (
    DETAIL_INLINE,
    MAX_PARTS,
    MAX_TEXT,
    RenderError,
    prompt_text,
    render_outcome,
    render_question,
    units,
)
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption


def record(*questions: AskUserQuestionItem, **fields: object) -> QuestionRecord:
    return QuestionRecord.model_validate({"questions": list(questions), "agent": AgentRef(id="a", name="bot")} | fields)


def item(**fields: object) -> AskUserQuestionItem:
    return AskUserQuestionItem.model_validate({"id": "q", "question": "Which?"} | fields)


def options(*labels: str, **described: str) -> list[AskUserQuestionOption]:
    return [AskUserQuestionOption(label=label, description=described.get(label)) for label in labels]


def test_agent_text_is_escaped_everywhere_in_the_message() -> None:
    hostile = "<b>x</b> & <a href='tg://user?id=1'>y</a>"
    message = render_question(
        record(item(question=hostile, header=hostile, detail=hostile), agent=AgentRef(id=hostile))
    )
    assert "<b>x</b>" not in message.text and "<a href='tg" not in message.text
    assert message.text.count("&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href='tg://user?id=1'&gt;y&lt;/a&gt;") == 4


LONG = "w&<" * 3000


@pytest.mark.parametrize("detail", [LONG, LONG[: DETAIL_INLINE // 4], None])
@pytest.mark.parametrize("answered", [0, 9])
def test_every_message_fits_telegrams_limit_however_long_the_agent_text(detail: str | None, answered: int) -> None:
    described = {f"{n} {LONG}": LONG for n in range(60)}
    question = item(question=LONG, header=LONG, detail=detail, options=options(*described, **described))
    questions = [question.model_copy(update={"id": f"q{n}"}) for n in range(10)]
    partial = {f"q{n}": AskUserQuestionAnswerItem(id=f"q{n}", selected=[LONG], custom=LONG) for n in range(answered)}
    asked = record(*questions, partial=partial)
    message = render_question(asked, note=LONG)
    assert units(message.text) <= MAX_TEXT
    assert all(units(part) <= MAX_TEXT for part in message.parts)
    assert units(render_outcome(asked).text) <= MAX_TEXT


def test_a_long_detail_goes_in_parts_before_the_question_and_the_rest_is_counted() -> None:
    detail = "\n".join(f"step {n}: " + "x" * 200 for n in range(200))
    message = render_question(record(item(detail=detail)))
    assert len(message.parts) == MAX_PARTS
    assert message.parts[0].startswith("📄 <b>Which?</b> (1/4)\n<blockquote>step 0:")
    assert "more characters)" in message.parts[-1]
    assert "The detail is in the message above" in message.text


def test_a_detail_that_fits_shows_in_an_expandable_quote() -> None:
    message = render_question(record(item(detail="1. back up\n2. migrate")))
    assert "<blockquote expandable>1. back up\n2. migrate</blockquote>" in message.text
    assert message.parts == ()


def test_emoji_count_twice_toward_the_limit() -> None:
    assert units("😀a") == 3


def test_every_callback_data_fits_64_bytes() -> None:
    labels = [f"option {n} " + "é" * 100 for n in range(keys.MAX_OPTIONS)]
    questions = [item(id=f"q{n}", options=options(*labels), multi_select=n % 2 == 0) for n in range(10)]
    rec = record(*questions)
    message = render_question(rec, mask=(1 << keys.MAX_OPTIONS) - 1)
    datas = [data for row in message.keyboard for _, data in row]
    assert datas and max(len(data.encode()) for data in datas) <= keys.MAX_CALLBACK_BYTES


def test_long_labels_are_cut_on_buttons_and_listed_in_full() -> None:
    label = "Deploy to the canary fleet first and watch the error budget for an hour"
    message = render_question(record(item(options=options(label, "No"))))
    assert message.keyboard[0][0][0].startswith("1. Deploy to the canary") and message.keyboard[0][0][0].endswith("…")
    assert f"1. <b>{label}</b>" in message.text


def test_descriptions_are_listed_with_their_options() -> None:
    message = render_question(record(item(options=options("Yes", "No", Yes="ship it"))))
    assert "1. <b>Yes</b> — ship it" in message.text


def test_a_multi_select_shows_ticks_from_the_mask_and_a_submit_counting_them() -> None:
    message = render_question(record(item(options=options("A", "B", "C"), multi_select=True)), mask=0b101)
    assert [text for row in message.keyboard for text, _ in row] == [
        "✓ A",
        "B",
        "✓ C",
        "Submit (2 chosen)",
        "✏️ Other…",
    ]


def test_more_than_ten_questions_cannot_be_shown() -> None:
    with pytest.raises(RenderError, match="ask at most 10 at once"):
        render_question(record(*(item(id=f"q{n}") for n in range(11))))


def test_the_outcome_names_who_answered_what_and_when_without_buttons() -> None:
    answered = record(
        item(options=options("Yes", "No")),
        status="answered",
        answer=AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="q", selected=["Yes"], custom="<now>")]),
        answered_by="111",
        answered_via="telegram",
        resolved_at=datetime(2026, 12, 3, 9, 30, tzinfo=UTC),
    )
    message = render_outcome(answered, {"111": "Alice <3"})
    assert message.keyboard == []
    assert "→ <b>Yes</b> + “&lt;now&gt;”" in message.text
    assert '✅ <b>Answered</b> by <a href="tg://user?id=111">Alice &lt;3</a> · 2026-12-03 09:30 UTC' in message.text


def test_an_answer_from_another_channel_names_the_channel() -> None:
    answered = record(item(), status="answered", answered_by="bob@example.org", answered_via="email")
    assert "by bob@example.org via email" in render_outcome(answered).text


def test_the_prompt_names_its_question_message_and_position() -> None:
    assert prompt_text(record(item()), 0, 4321).endswith("\nref 4321/1")
