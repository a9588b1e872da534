"""Answering in Telegram end to end: the real python-telegram-bot long-polling the fake Bot API, the real seam."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core import (
    AbortController,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    ErrorCode,
    UserQuestionError,
)

from .rig import ALICE, BOB, MALLORY, TelegramRig, subscription, telegram_rig

pytestmark = pytest.mark.anyio


def choice(**fields: Any) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Staging"), AskUserQuestionOption(label="Production")]
    return AskUserQuestionItem.model_validate({"id": "env", "question": "Deploy where?", "options": options} | fields)


def checks() -> AskUserQuestionItem:
    labels = ["Unit tests", "Lint", "Docs"]
    options = [AskUserQuestionOption(label=label) for label in labels]
    return AskUserQuestionItem(id="checks", question="Which checks?", options=options, multi_select=True)


def plan() -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Approve"), AskUserQuestionOption(label="Request changes")]
    return AskUserQuestionItem(
        id="plan",
        question="Approve the migration plan?",
        detail="1. Back up the database\n2. Run the migration",
        options=options,
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )


def free() -> AskUserQuestionItem:
    return AskUserQuestionItem(id="name", question="What should the release be called?")


def press(rig: TelegramRig, where: tuple[int, int], who: dict[str, Any], text: str) -> int:
    """Tap the button whose text contains `text`; returns the update id."""
    data = next(data for shown, data in rig.fake.buttons(*where) if text in shown)
    return rig.fake.tap(*where, who, data)


async def test_one_tap_answers_a_single_select_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        press(rig, where, ALICE, "Staging")
        answer = await asked.answer()
        assert [(item.id, item.selected) for item in answer.answers] == [("env", ["Staging"])]


async def test_the_answered_message_shows_who_answered_what_and_when_without_buttons(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        press(rig, where, ALICE, "Production")
        await asked.answer()
        await rig.fake.wait_for("editMessageText")
        message = rig.message(where)
        assert "reply_markup" not in message
        assert "→ <b>Production</b>" in message["text"]
        assert 'Answered</b> by <a href="tg://user?id=111">Alice</a>' in message["text"]
        assert "UTC" in message["text"]


async def test_the_tapper_gets_a_toast_that_the_answer_is_recorded(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        press(rig, where, ALICE, "Staging")
        await asked.answer()
        (toast,) = await rig.fake.wait_for("answerCallbackQuery")
        assert toast["text"] == "Answer recorded."


async def test_multi_select_ticks_options_and_submits_them(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        where = await rig.sent()
        press(rig, where, ALICE, "Unit tests")
        await rig.fake.wait_for("editMessageReplyMarkup", 1)
        press(rig, where, ALICE, "Docs")
        await rig.fake.wait_for("editMessageReplyMarkup", 2)
        shown = [text for text, _ in rig.fake.buttons(*where)]
        assert shown[:3] == ["✓ Unit tests", "Lint", "✓ Docs"]
        assert "Submit (2 chosen)" in shown
        press(rig, where, ALICE, "Submit")
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Unit tests", "Docs"]


async def test_ticking_twice_unticks(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.ask(checks())
        where = await rig.sent()
        press(rig, where, ALICE, "Lint")
        await rig.fake.wait_for("editMessageReplyMarkup", 1)
        press(rig, where, ALICE, "Lint")
        await rig.fake.wait_for("editMessageReplyMarkup", 2)
        assert [text for text, _ in rig.fake.buttons(*where)][1] == "Lint"


async def test_a_plan_review_shows_the_plan_and_approve_answers_it(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(plan())
        where = await rig.sent()
        assert (
            "<blockquote expandable>1. Back up the database\n2. Run the migration</blockquote>"
            in (rig.message(where)["text"])
        )
        assert [text for text, _ in rig.fake.buttons(*where)] == [
            "✅ Approve",
            "Request changes",
            "✏️ Request changes in words…",
        ]
        press(rig, where, ALICE, "Approve")
        assert (await asked.answer()).answers[0].selected == ["Approve"]


async def test_words_come_through_a_force_reply_prompt(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(plan())
        where = await rig.sent()
        press(rig, where, ALICE, "in words")
        prompt_args = (await rig.fake.wait_for("sendMessage", 2))[1]
        assert prompt_args["reply_markup"]["force_reply"] is True
        prompt = (where[0], max(key[1] for key in rig.fake.messages if key[0] == where[0]))
        rig.fake.reply(*prompt, ALICE, "Back up twice, please")
        answer = await asked.answer()
        assert (answer.answers[0].selected, answer.answers[0].custom) == ([], "Back up twice, please")


async def test_a_reply_to_the_question_message_answers_in_words(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(free())
        where = await rig.sent()
        rig.fake.reply(*where, ALICE, "Aurora")
        assert (await asked.answer()).answers[0].custom == "Aurora"


async def test_a_reply_naming_an_option_chooses_it(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        rig.fake.reply(*where, ALICE, "2")
        assert (await asked.answer()).answers[0].selected == ["Production"]


async def test_several_questions_are_answered_one_by_one_in_the_same_message(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice(), checks(), free())
        where = await rig.sent()
        assert "· 1 of 3" in rig.message(where)["text"]
        press(rig, where, ALICE, "Staging")
        await rig.until(lambda: "· 2 of 3" in rig.message(where)["text"])
        assert "✓ 1. <i>Deploy where?</i> — <b>Staging</b>" in rig.message(where)["text"]
        press(rig, where, ALICE, "Lint")
        await rig.until(lambda: "✓ Lint" in [text for text, _ in rig.fake.buttons(*where)])
        press(rig, where, ALICE, "Submit")
        await rig.until(lambda: "· 3 of 3" in rig.message(where)["text"])
        rig.fake.reply(*where, BOB, "Aurora")
        answer = await asked.answer()
        assert [(item.selected, item.custom) for item in answer.answers] == [
            (["Staging"], None),
            (["Lint"], None),
            ([], "Aurora"),
        ]
        assert len(rig.fake.calls_to("sendMessage")) == 1


async def test_a_tap_on_an_earlier_questions_button_changes_nothing(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice(), free())
        where = await rig.sent()
        stale = next(data for text, data in rig.fake.buttons(*where) if text == "Production")
        press(rig, where, ALICE, "Staging")
        await rig.until(lambda: "· 2 of 2" in rig.message(where)["text"])
        rig.fake.tap(*where, ALICE, stale)
        toasts = await rig.fake.wait_for("answerCallbackQuery", 2)
        assert "already answered" in toasts[1]["text"]
        assert not asked.done.is_set()
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.partial["env"].selected == ["Staging"]


async def test_someone_not_among_the_responders_gets_an_alert_and_nothing_changes(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(responders=["111"])) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        press(rig, where, MALLORY, "Production")
        (alert,) = await rig.fake.wait_for("answerCallbackQuery")
        assert alert["show_alert"] is True
        assert alert["text"] == "Only user 111 may answer this question. Nothing was changed."
        assert not asked.done.is_set()
        assert [text for text, _ in rig.fake.buttons(*where)][:2] == ["Staging", "Production"]
        press(rig, where, ALICE, "Staging")
        assert (await asked.answer()).answers[0].selected == ["Staging"]


async def test_someone_not_among_the_responders_cannot_tick_either(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(responders=["111"])) as rig:
        rig.ask(checks())
        where = await rig.sent()
        press(rig, where, MALLORY, "Lint")
        (alert,) = await rig.fake.wait_for("answerCallbackQuery")
        assert alert["show_alert"] is True
        assert rig.fake.calls_to("editMessageReplyMarkup") == []


async def test_a_late_tap_is_told_who_answered(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        data = next(data for text, data in rig.fake.buttons(*where) if text == "Production")
        press(rig, where, ALICE, "Staging")
        await asked.answer()
        rig.fake.tap(*where, BOB, data)
        alerts = await rig.fake.wait_for("answerCallbackQuery", 2)
        assert alerts[1]["text"].startswith("This question was already answered by Alice at ")


async def test_cancelling_edits_the_message_to_say_so(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        controller = AbortController()
        asked = rig.ask(choice(), signal=controller.signal)
        where = await rig.sent()
        controller.abort()
        outcome = await asked.result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == ErrorCode.ASK_ABORTED
        await rig.fake.wait_for("editMessageText")
        assert "🚫 <b>Cancelled</b>" in rig.message(where)["text"]
        assert "reply_markup" not in rig.message(where)


async def test_expiry_edits_the_message_to_say_so(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(expire_after="1h")) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        await rig.until(lambda: rig.clock.sleepers == 1)
        await rig.clock.advance(timedelta(hours=1))
        outcome = await asked.result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == ErrorCode.ASK_TIMEOUT
        await rig.fake.wait_for("editMessageText")
        assert "⌛ <b>Expired</b>" in rig.message(where)["text"]


async def test_a_reminder_replies_to_the_question_mentioning_the_responders(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(remind_every="10m", responders=["111"])) as rig:
        rig.ask(choice())
        where = await rig.sent()
        await rig.until(lambda: rig.clock.sleepers == 1)  # the reminder waits for its time
        await rig.clock.advance(timedelta(minutes=10))
        reminder = (await rig.fake.wait_for("sendMessage", 2))[1]
        assert reminder["reply_parameters"]["message_id"] == where[1]
        assert '<a href="tg://user?id=111">' in reminder["text"] and "Reminder 1" in reminder["text"]


async def test_a_reply_to_the_reminder_answers_the_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(remind_every="10m")) as rig:
        asked = rig.ask(free())
        where = await rig.sent()
        await rig.until(lambda: rig.clock.sleepers == 1)  # the reminder waits for its time
        await rig.clock.advance(timedelta(minutes=10))
        await rig.fake.wait_for("sendMessage", 2)
        reminder = (where[0], max(key[1] for key in rig.fake.messages if key[0] == where[0]))
        rig.fake.reply(*reminder, ALICE, "Aurora")
        assert (await asked.answer()).answers[0].custom == "Aurora"


async def test_two_approvals_show_progress_and_then_the_answer(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(approvals=2, responders=["111", "222"])) as rig:
        asked = rig.ask(plan())
        where = await rig.sent()
        press(rig, where, ALICE, "Approve")
        await rig.until(lambda: "1 of 2 approvals: Alice" in rig.message(where)["text"])
        assert "✅ Approve" in [text for text, _ in rig.fake.buttons(*where)]
        press(rig, where, BOB, "Approve")
        assert (await asked.answer()).answers[0].selected == ["Approve"]
        await rig.until(lambda: "reply_markup" not in rig.message(where))
        assert "Alice" in rig.message(where)["text"] and "Bob" in rig.message(where)["text"]


async def test_each_agent_gets_its_own_forum_topic(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(topic="agent")) as rig:
        first = rig.ask(free())
        await rig.sent(1)
        second = rig.ask(choice())
        await rig.fake.wait_for("sendMessage", 2)
        (topic,) = await rig.fake.wait_for("createForumTopic")
        assert topic["name"] == "deploy-bot"
        sends = rig.fake.calls_to("sendMessage")
        assert sends[0]["message_thread_id"] == sends[1]["message_thread_id"] == "700"
        assert not first.done.is_set() and not second.done.is_set()


async def test_a_fixed_topic_takes_every_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(topic=42)) as rig:
        rig.ask(free())
        await rig.sent()
        assert rig.fake.calls_to("sendMessage")[0]["message_thread_id"] == "42"
        assert rig.fake.calls_to("createForumTopic") == []
