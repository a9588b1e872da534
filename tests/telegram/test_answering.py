"""Answering in Telegram end to end: the real python-telegram-bot against the fake Bot API, long polling."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import AskUserQuestionItem, AskUserQuestionOption

from .rig import ALICE, telegram_rig

pytestmark = pytest.mark.anyio


def choice(**fields: object) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Staging"), AskUserQuestionOption(label="Production")]
    return AskUserQuestionItem.model_validate({"id": "env", "question": "Deploy where?", "options": options} | fields)


async def test_one_tap_answers_a_single_select_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        data = dict(rig.fake.buttons(*where))
        rig.fake.tap(*where, ALICE, next(d for t, d in data.items() if t == "Staging"))
        answer = await asked.answer()
        assert [(item.id, item.selected) for item in answer.answers] == [("env", ["Staging"])]
