"""A person (or an automation) who taps or replies within a millisecond of the question being sent, before
handraise has recorded where it went: the tap or reply waits for the recording and answers the agent; a tap that
matches no question at all is logged and the person is asked, in an alert, to try again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from .fake_telegram import BOT_USER
from .rig import ALICE, CHAT, TelegramRig, telegram_rig
from .test_answering import choice, free

pytestmark = pytest.mark.anyio


def act_at_once(rig: TelegramRig, act: Callable[[int, int], object]) -> None:
    """Have the person act the moment the question's message is sent: before Telegram's answer reaches handraise."""

    async def on_send(chat: int, message_id: int) -> None:
        rig.fake.on_send = None
        act(chat, message_id)
        await rig.until(lambda: rig.channel.replies.awaiting == 1)  # handraise has it, and waits for the recording

    rig.fake.on_send = on_send


def tap_production(rig: TelegramRig) -> Callable[[int, int], None]:
    def tap(chat: int, message_id: int) -> None:
        data = next(data for text, data in rig.fake.buttons(chat, message_id) if "Production" in text)
        rig.fake.tap(chat, message_id, ALICE, data)

    return tap


async def test_a_tap_within_a_millisecond_of_the_question_answers_the_agent(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        act_at_once(rig, tap_production(rig))
        asked = rig.ask(choice())
        assert (await asked.answer()).answers[0].selected == ["Production"]
        (acknowledged,) = await rig.fake.wait_for("answerCallbackQuery")
        assert acknowledged.get("text") == "Answer recorded."


async def test_a_reply_within_a_millisecond_of_the_question_answers_the_agent(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        act_at_once(rig, lambda chat, message_id: rig.fake.reply(chat, message_id, ALICE, "v2.1 Cobalt"))
        asked = rig.ask(free())
        assert (await asked.answer()).answers[0].custom == "v2.1 Cobalt"


async def test_a_tap_on_a_question_handraise_never_recorded_is_logged_and_the_person_asked_to_try_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with telegram_rig(tmp_path) as rig:
        message = {"message_id": 9, "date": 1, "chat": {"id": CHAT, "type": "supergroup"}, "from": BOT_USER}
        query = {"id": "cq9", "from": ALICE, "message": message | {"text": "?"}, "chat_instance": "ci", "data": "p:0:0"}
        with caplog.at_level(logging.WARNING, logger="bot.channels.replies"):
            rig.fake.push({"callback_query": query})
            (told,) = await rig.fake.wait_for("answerCallbackQuery")
        assert (told["text"], told["show_alert"]) == (
            "handraise could not find this question yet; try again in a moment.",
            True,
        )
        (line,) = caplog.messages
        assert line.startswith(f"telegram: a tap on '{CHAT}:9' matched no question")
