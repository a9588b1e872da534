"""A coding agent's permission prompt in Telegram: Allow, Deny… and Always allow, with Deny… sending the prompt for
the person's reason. What comes back is read by the hook's own `decision_of`: what the agent gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, DENY, Decision, Permission, decision_of, question
from core import AskUserQuestionItem

from .rig import ALICE, TelegramRig, telegram_rig
from .test_answering import press

pytestmark = pytest.mark.anyio

PERMISSION = Permission(
    agent="gemini", project="billing-api", tool="run_shell_command", kind="shell", request="make", detail="make"
)
PROMPT = AskUserQuestionItem.model_validate(question(PERMISSION))


async def deny_prompt(rig: TelegramRig, where: tuple[int, int]) -> tuple[int, int]:
    """Tap Deny…; the prompt the bot sends for the reason."""
    press(rig, where, ALICE, DENY)
    args = (await rig.fake.wait_for("sendMessage", 2))[1]
    assert args["reply_markup"]["force_reply"] is True
    assert args["reply_markup"]["input_field_placeholder"] == "Your reason (optional)"
    assert "Reply to this message with your reason" in args["text"] and "just “Deny”" in args["text"]
    return where[0], max(key[1] for key in rig.fake.messages if key[0] == where[0])


async def test_the_prompt_has_three_buttons_and_no_separate_words_button(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.ask(PROMPT)
        where = await rig.sent()
        shown = [text for text, _ in rig.fake.buttons(*where)]
        assert shown == [f"✅ 1. {ALLOW}", f"2. {DENY}", f"3. {ALWAYS}"]
        assert "Deny… asks for your reason (optional)" in rig.message(where)["text"]


async def test_deny_then_words_is_a_deny_carrying_them(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        where = await rig.sent()
        prompt = await deny_prompt(rig, where)
        rig.fake.reply(*prompt, ALICE, "the build cache is shared; ask Bob")
        answer = (await asked.answer()).to_wire()
        assert decision_of(answer, None) == Decision("deny", "the build cache is shared; ask Bob")


@pytest.mark.parametrize("reply", ["Deny", "deny…", "  DENY. "])
async def test_deny_then_just_the_word_is_a_plain_deny(tmp_path: Path, reply: str) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        where = await rig.sent()
        prompt = await deny_prompt(rig, where)
        rig.fake.reply(*prompt, ALICE, reply)
        answer = (await asked.answer()).to_wire()
        assert answer["answers"] == [{"id": "permission", "selected": [DENY]}]
        assert decision_of(answer, None) == Decision("deny", "Denied through handraise.")


async def test_a_reply_to_the_question_saying_deny_and_why_gives_the_reason(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        where = await rig.sent()
        rig.fake.reply(*where, ALICE, "Deny: not on the release branch")
        answer = (await asked.answer()).to_wire()
        assert decision_of(answer, None) == Decision("deny", "not on the release branch")


async def test_allow_is_one_tap(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        where = await rig.sent()
        press(rig, where, ALICE, ALLOW)
        assert decision_of((await asked.answer()).to_wire(), None) == Decision("allow", "Allowed through handraise.")
