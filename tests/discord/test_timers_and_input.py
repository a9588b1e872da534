"""The Discord channel with the kit's timers and approvals (expiry, reminders, k-of-n), long plans sent as a file,
two people at once, and garbage on the Gateway."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from core import ErrorCode, UserQuestionError
from tests.bot.fakes import sync_store

from .fake_discord import EPHEMERAL
from .rig import ALICE, BOB, REVIEWERS, discord_rig, subscription
from .test_answering import callback, choice, control, plan

pytestmark = pytest.mark.anyio

RESPONDERS = [ALICE["id"], f"role:{REVIEWERS}"]


async def test_expiry_edits_the_message_to_say_so(tmp_path: Path) -> None:
    async with discord_rig(tmp_path, subscription(expire_after="1h", responders=RESPONDERS)) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        await rig.until(lambda: rig.clock.sleepers == 1)
        await rig.clock.advance(timedelta(hours=1))
        outcome = await asked.result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == ErrorCode.ASK_TIMEOUT
        await rig.fake.wait_for("PATCH /channels")
        assert "Expired" in rig.message(message)["content"] and rig.message(message)["components"] == []


async def test_a_reminder_goes_to_the_thread_as_a_reply_that_pings_nobody(tmp_path: Path) -> None:
    async with discord_rig(tmp_path, subscription(remind_every="10m", responders=RESPONDERS)) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        await rig.until(lambda: rig.clock.sleepers == 1)
        await rig.clock.advance(timedelta(minutes=10))
        await rig.until(lambda: any("Reminder 1" in m["content"] for m in rig.fake.messages.values()))
        (call,) = [c for c in rig.fake.calls_to("POST /channels/") if "Reminder" in c.body.get("content", "")]
        assert call.body["message_reference"]["message_id"] == message
        assert call.body["allowed_mentions"] == {"parse": []}
        assert f"<@{ALICE['id']}>" in call.body["content"]
        await rig.fake.post(rig.message(message)["channel_id"], ALICE, "1")  # the thread still answers
        assert (await asked.answer()).answers[0].selected == ["Staging"]


async def test_two_approvals_show_progress_and_then_the_answer(tmp_path: Path) -> None:
    async with discord_rig(tmp_path, subscription(approvals=2, responders=RESPONDERS)) as rig:
        asked = rig.ask(plan())
        message = await rig.sent()
        first = await rig.fake.click(message, control(rig, message, "Approve"), ALICE)
        told = await callback(rig, first)
        assert told["data"]["flags"] == EPHEMERAL and "1 of 2 approvals" in told["data"]["content"]
        await rig.until(lambda: "1 of 2 approvals" in rig.message(message)["content"])
        assert rig.fake.buttons(message)[0]["label"] == "Approve"
        await rig.fake.click(message, control(rig, message, "Approve"), BOB, roles=[REVIEWERS])
        assert (await asked.answer()).answers[0].selected == ["Approve"]
        await rig.until(lambda: rig.message(message)["components"] == [])
        shown = rig.message(message)["content"]
        assert f"<@{ALICE['id']}>" in shown and f"<@{BOB['id']}>" in shown


async def test_two_people_pressing_at_once_one_wins_the_other_is_told(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        pressed: list[str] = []
        async with anyio.create_task_group() as both:
            for who, label in ((ALICE, "Staging"), (BOB, "Production")):
                both.start_soon(_press, rig, message, label, who, pressed)
        answer = await asked.answer()
        callbacks = [await callback(rig, interaction) for interaction in pressed]
        assert sorted(c["type"] for c in callbacks) == [4, 6]
        late = next(c for c in callbacks if c["type"] == 4)
        assert late["data"]["flags"] == EPHEMERAL and "already answered" in late["data"]["content"]
        assert answer.answers[0].selected in (["Staging"], ["Production"])
        kinds = [event.kind for event in await rig.ledger.store.history(question_id=rig.question_id())]
        assert kinds.count("answered") == 1 and kinds.count("duplicate") == 1


async def _press(rig: Any, message: str, label: str, who: dict[str, Any], into: list[str]) -> None:
    into.append(await rig.fake.click(message, control(rig, message, label), who, roles=[REVIEWERS]))


async def test_a_plan_too_long_for_four_messages_is_attached_as_a_file(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(plan("\n".join(f"step {n}: " + "x" * 60 for n in range(400))))
        message = await rig.sent()
        (attached,) = [c for c in rig.fake.calls_to("POST /channels/") if c.files]
        assert attached.files == ("detail.md",) and "attached" in attached.body["content"]
        assert "attached above" in rig.message(message)["content"]
        await rig.fake.click(message, control(rig, message, "Approve"), ALICE)
        assert (await asked.answer()).answers[0].selected == ["Approve"]


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"id": "1", "token": "t"},
        {"id": "not-a-number", "token": "t", "data": {"custom_id": "hr:p:0:0"}},
        {"id": "123", "token": None},
        {"id": "124", "token": "t", "member": "x", "data": [], "message": 5},
        {"id": "125", "token": "t", "member": {"user": {"id": "x"}, "roles": [None, {}]}, "data": {"custom_id": 5}},
        {"id": "126", "token": "t", "user": {"id": "1" * 400}, "data": {"custom_id": "hr:w:0"}, "message": {"id": 7}},
    ],
)
async def test_garbage_interactions_change_nothing_and_break_nothing(tmp_path: Path, data: dict[str, Any]) -> None:
    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        await rig.sent()
        await rig.channel.handle("INTERACTION_CREATE", data)
        await rig.channel.handle("MESSAGE_CREATE", data)
        await rig.channel.handle("SOMETHING_NEW", data)
        assert [q.status for q in await rig.ledger.store.list_questions()] == ["pending"]


async def test_garbage_on_the_gateway_makes_the_channel_resume(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        socket = rig.fake.session.socket
        assert socket is not None
        await socket.ws.send_str("{not json")
        await rig.until(lambda: len(rig.fake.resumed) == 1 and rig.fake.session.socket is not None)
        await rig.fake.click(message, control(rig, message, "Staging"), ALICE)
        assert (await asked.answer()).answers[0].selected == ["Staging"]


async def test_a_status_note_goes_to_the_agents_thread_with_nothing_to_answer(tmp_path: Path) -> None:
    from bot.api.notes import StatusNotes
    from bot.questions.status_note import StatusNote
    from bot.store.records import AgentRef

    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        message = await rig.sent()
        agent = AgentRef(id=rig.agent.id, name=rig.agent.name)
        store = sync_store(rig.ledger.store)
        await rig.until(lambda: any(store.get_delivery(q.id, "discord") for q in store.list_questions()))
        shown = await StatusNotes(rig.ledger).post(StatusNote(agent=agent, event="finished", text="@everyone **done**"))
        assert shown == ["discord"]
        (call,) = [c for c in rig.fake.calls_to("POST /channels/") if "📣" in c.body.get("content", "")]
        assert call.path == f"/channels/{rig.message(message)['channel_id']}/messages"
        assert "components" not in call.body and call.body["allowed_mentions"] == {"parse": []}
        assert "\\@everyone" in call.body["content"] and "\\*\\*done\\*\\*" in call.body["content"]
