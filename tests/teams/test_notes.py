"""Status notes in Teams: "finished" or "waiting for you", in the thread of the agent's last question, as plain text
that can mention nobody."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.api.notes import StatusNotes
from bot.questions.status_note import NoteEvent, StatusNote
from bot.store.records import AgentRef
from tests.bot.fakes import sync_store

from .fake_teams import CONVERSATION
from .questions import choice
from .rig import teams_rig

pytestmark = pytest.mark.anyio


def note(event: NoteEvent = "finished", text: str | None = None) -> StatusNote:
    ref: dict[str, Any] = {"id": "deploy-7", "name": "deploy-bot", "labels": {"project": "billing-api"}}
    return StatusNote(agent=AgentRef.model_validate(ref), event=event, text=text)


async def test_a_note_goes_in_the_thread_of_the_agents_last_question(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.ask(choice())
        card_id = await rig.posted()
        store = sync_store(rig.ledger.store)
        with anyio.fail_after(5):
            while not any(store.get_delivery(q.id, "teams") for q in store.list_questions()):
                await anyio.sleep(0.005)
        assert await StatusNotes(rig.ledger).post(note("finished", "All 112 tests pass. <at>everyone</at>")) == [
            "teams"
        ]
        posted = rig.fake.history[card_id][-1]
        assert posted["conversation"]["id"] == f"{CONVERSATION};messageid={card_id}"
        assert "All 112 tests pass. <at>everyone</at>" in posted["text"] and posted["textFormat"] == "plain"
        assert "entities" not in posted


async def test_a_note_before_any_question_is_a_post_of_its_own(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        assert await StatusNotes(rig.ledger).post(note("waiting")) == ["teams"]
        (posted,) = rig.fake.posted()
        assert "deploy-bot" in posted["text"]
        (activity,) = rig.fake.activities.values()
        assert activity["conversation"]["id"] == CONVERSATION
