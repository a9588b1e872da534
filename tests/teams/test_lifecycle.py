"""A Teams card through a question's life: cancelled, expired, reminded, approved by two, kept over a restart, rate
limited, and a long plan cut to fit; with garbage and hostile activities changing nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.store.records import QuestionRecord
from bot.teams.connector import MAX_BODY, body_bytes
from bot.teams.conversations import ConversationBook
from core import AbortController, ErrorCode, UserQuestionError

from .fake_teams import ALICE, BOB, CONVERSATION, fake_teams
from .questions import action, choice, plan, texts
from .rig import TeamsRig, teams_rig

pytestmark = pytest.mark.anyio


async def press(rig: TeamsRig, card_id: str, who: Any, title: str) -> tuple[int, Any]:
    data = dict(action(rig.fake.card(card_id), title)["data"])
    return await rig.fake.send(rig.fake.execute(card_id, who, data))


async def until(predicate: Any, seconds: float = 5) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.005)


async def test_cancelling_updates_the_card_to_say_so_with_no_actions(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        controller = AbortController()
        asked = rig.ask(choice(), signal=controller.signal)
        card_id = await rig.posted()
        controller.abort()
        outcome = await asked.result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == ErrorCode.ASK_ABORTED
        await rig.fake.wait_for("PUT")
        card = rig.fake.card(card_id)
        assert "🚫 **Cancelled**" in texts(card) and "actions" not in card


async def test_expiry_updates_the_card_to_say_so(tmp_path: Path) -> None:
    async with teams_rig(tmp_path, {"expire_after": "1h"}) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        await until(lambda: rig.clock.sleepers == 1)
        await rig.clock.advance(timedelta(hours=1))
        outcome = await asked.result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == ErrorCode.ASK_TIMEOUT
        await rig.fake.wait_for("PUT")
        card = rig.fake.card(card_id)
        assert "⌛ **Expired**" in texts(card) and "actions" not in card


async def test_a_reminder_is_a_reply_in_the_cards_thread(tmp_path: Path) -> None:
    async with teams_rig(tmp_path, {"remind_every": "10m"}) as rig:
        rig.ask(choice())
        card_id = await rig.posted()
        await until(lambda: rig.clock.sleepers == 1)
        await rig.clock.advance(timedelta(minutes=10))
        reminder = (await rig.fake.wait_for("POST", 2))[1]
        assert "Reminder 1" in reminder["text"]
        assert rig.fake.history[card_id][-1]["conversation"]["id"] == f"{CONVERSATION};messageid={card_id}"


async def test_two_approvals_are_counted_on_the_card_and_then_answer(tmp_path: Path) -> None:
    async with teams_rig(tmp_path, {"approvals": 2}) as rig:
        asked = rig.ask(plan())
        card_id = await rig.posted()
        _, body = await press(rig, card_id, ALICE, "Approve")
        assert "☑️ 1 of 2 approvals: Alice Archer" in texts(body["value"])
        await press(rig, card_id, BOB, "Approve")
        assert (await asked.answer()).answers[0].selected == ["Approve"]
        await until(lambda: "Answered** by" in texts(rig.fake.card(card_id)))
        assert "Alice Archer, Bob Baker" in texts(rig.fake.card(card_id))


async def test_a_long_plan_is_cut_with_its_start_shown_and_every_body_fits(tmp_path: Path) -> None:
    detail = "\n".join(f"{n}. step with ünïcödé text — {'x' * 60}" for n in range(1, 2001))
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(plan(detail))
        card_id = await rig.posted()
        shown = texts(rig.fake.card(card_id))
        assert "1. step with ünïcödé text" in shown and "more characters not shown" in shown
        await press(rig, card_id, ALICE, "Approve")
        await asked.answer()
        await rig.fake.wait_for("PUT")
        assert all(call.size <= MAX_BODY for call in rig.fake.calls if call.body is not None)
        assert [call.status for call in rig.fake.calls if call.status == 413] == []


async def test_a_rate_limited_post_waits_its_retry_after_and_posts_once(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.fake.rate_limit("POST", retry_after="4")
        rig.ask(choice())
        await rig.posted()
        assert rig.waits.seconds == [4.0]
        assert [call.status for call in rig.fake.calls if call.method == "POST"] == [429, 201]


async def test_a_press_within_moments_of_the_post_answers_the_question(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        answers: list[tuple[int, Any]] = []

        async def press_at_once(card_id: str) -> None:
            data = dict(action(rig.fake.card(card_id), "Production")["data"])
            answers.append(await rig.fake.send(rig.fake.execute(card_id, ALICE, data)))

        rig.fake.on_post = lambda card_id: rig.tasks.start_soon(press_at_once, card_id)
        asked = rig.ask(choice())
        assert (await asked.answer()).answers[0].selected == ["Production"]
        await until(lambda: bool(answers))
        assert "Answered** by Alice Archer" in texts(answers[0][1]["value"])


async def _pending(rig: TeamsRig) -> QuestionRecord:
    record = QuestionRecord(questions=[choice()], origin="api", created_at=rig.clock.now())
    await rig.ledger.store.create_question(record)
    rig.resume(record)
    await rig.posted()
    return record


async def test_an_old_card_still_answers_after_a_restart_and_nothing_is_posted_again(tmp_path: Path) -> None:
    async with fake_teams() as fake:
        async with teams_rig(tmp_path, fake=fake) as first:
            record = await _pending(first)
            card_id = await first.posted()
        async with teams_rig(tmp_path, fake=fake) as second:
            stored = await second.ledger.store.get_question(record.id)
            assert stored is not None and stored.status == "pending"
            asked = second.resume(stored)
            await press(second, card_id, ALICE, "Production")
            assert (await asked.answer()).answers[0].selected == ["Production"]
            assert len(fake.posted()) == 1
            await until(lambda: "actions" not in fake.card(card_id))


async def test_a_thread_reply_still_answers_after_a_restart(tmp_path: Path) -> None:
    async with fake_teams() as fake:
        async with teams_rig(tmp_path, fake=fake) as first:
            record = await _pending(first)
            card_id = await first.posted()
        async with teams_rig(tmp_path, fake=fake) as second:
            stored = await second.ledger.store.get_question(record.id)
            assert stored is not None
            asked = second.resume(stored)
            await fake.send(fake.reply(card_id, ALICE, "1"))
            assert (await asked.answer()).answers[0].selected == ["Staging"]


async def test_an_activity_delivered_again_after_a_restart_is_acted_on_once(tmp_path: Path) -> None:
    async with fake_teams() as fake:
        async with teams_rig(tmp_path, fake=fake) as first:
            record = await _pending(first)
            card_id = await first.posted()
            data = dict(action(fake.card(card_id), "Staging")["data"])
            activity = fake.execute(card_id, BOB, data)
            await fake.send(activity)
            await until(lambda: "actions" not in fake.card(card_id))
        async with teams_rig(tmp_path, fake=fake) as second:
            status, body = await fake.send(activity)
            assert status == 200 and "Answered** by" in texts(body["value"])
            events = [e.kind for e in await second.ledger.store.history(question_id=record.id)]
            assert events.count("answered") == 1 and "duplicate" not in events


HOSTILE: list[dict[str, Any]] = [
    {"type": "invoke", "name": "adaptiveCard/action", "value": "not an object"},
    {"type": "invoke", "name": "adaptiveCard/action", "value": {"action": {"data": {"handraise": 5}}}},
    {"type": "invoke", "name": "adaptiveCard/action", "value": {"action": {"data": {"handraise": "x" * 500, "q": 0}}}},
    {"type": "invoke", "name": "adaptiveCard/action", "value": {"action": {"data": {"handraise": "q", "q": -1}}}},
    {"type": "invoke", "name": "adaptiveCard/action", "value": {"action": {"data": {"handraise": "q", "q": True}}}},
    {"type": "invoke", "name": "somethingElse", "value": {}},
    {"type": "message", "value": [1, 2]},
    {"type": "message", "text": "x" * 100_000},
    {"type": "message", "text": None},
    {"type": "event", "name": "whatever"},
    {"type": "message", "id": 5, "text": "2"},
    {"type": "message", "from": "nobody", "text": "2"},
    {"type": "message", "conversation": "19:x", "text": "2"},
]


@pytest.mark.parametrize("fields", HOSTILE, ids=lambda fields: json.dumps(fields)[:60])
async def test_garbage_activities_are_answered_2xx_and_change_nothing(tmp_path: Path, fields: dict[str, Any]) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        activity = rig.fake.activity(str(fields.get("type")), ALICE, replyToId=card_id) | fields
        status, _ = await rig.fake.send(activity)
        assert 200 <= status < 300
        assert not asked.done.is_set() and rig.fake.updates() == []


async def test_a_press_naming_an_option_that_is_not_there_changes_nothing(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        data = dict(action(rig.fake.card(card_id), "Staging")["data"]) | {"o": 7}
        status, body = await rig.fake.send(rig.fake.execute(card_id, ALICE, data))
        assert status == 200 and body["type"] == "application/vnd.microsoft.card.adaptive"
        assert not asked.done.is_set()


async def test_the_conversations_the_bot_is_added_to_are_kept_for_the_listing(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        added = rig.fake.activity("conversationUpdate", ALICE, membersAdded=[{"id": "28:bot"}])
        added["channelData"] |= {"channel": {"id": CONVERSATION, "name": "deploys"}}
        status, _ = await rig.fake.send(added)
        assert status == 200
        (seen,) = ConversationBook(tmp_path / "teams-conversations.json").all()
        assert (seen.conversation, seen.service_url, seen.team, seen.channel) == (
            CONVERSATION,
            rig.fake.service_url,
            "Platform",
            "deploys",
        )


def test_a_card_activity_is_measured_as_sent() -> None:
    assert len(body_bytes({"text": "é"})) == len('{"text":"é"}'.encode())


async def test_a_press_is_answered_at_once_while_the_update_for_everyone_waits_out_a_429(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.ask(choice(), plan())
        card_id = await rig.posted()
        rig.fake.rate_limit("PUT", retry_after="30")
        status, body = await press(rig, card_id, ALICE, "Staging")
        assert status == 200 and "· 2 of 2" in texts(body["value"])
        await until(lambda: "· 2 of 2" in texts(rig.fake.card(card_id)))
        assert rig.waits.seconds == [30.0]


async def test_an_unreadable_thread_reply_is_told_why_in_the_thread(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        await rig.fake.send(rig.fake.reply(card_id, ALICE, "7"))
        told = (await rig.fake.wait_for("POST", 2))[1]
        assert "1 to 2" in told["text"] and "entities" not in told
        assert rig.fake.history[card_id][-1]["conversation"]["id"].endswith(f";messageid={card_id}")
        assert not asked.done.is_set()


async def test_a_thread_reply_from_someone_not_a_responder_answers_nothing_and_says_nothing(tmp_path: Path) -> None:
    async with teams_rig(tmp_path, {"responders": [ALICE.email]}) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        status, _ = await rig.fake.send(rig.fake.reply(card_id, BOB, "2"))
        assert status == 200
        assert not asked.done.is_set() and len(rig.fake.posted()) == 1


@pytest.mark.parametrize(
    ("status", "advice"),
    [(403, "add the app to the team"), (404, "check the conversation id"), (500, "see Teams' answer")],
)
async def test_a_card_teams_refuses_fails_the_question_with_advice(tmp_path: Path, status: int, advice: str) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.fake.fail("POST", status)
        outcome = await rig.ask(choice()).result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == "DELIVERY_FAILED"
        assert advice in outcome.message and "app-password" not in outcome.message


async def test_a_wrong_app_password_fails_the_question_without_showing_it(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.channel.connector.token._password = "wrong-secret-value"
        outcome = await rig.ask(choice()).result()
        assert isinstance(outcome, UserQuestionError) and "check the app id and password" in outcome.message
        assert "wrong-secret-value" not in outcome.message


async def test_a_press_while_teams_cannot_say_who_pressed_is_answered_and_changes_nothing(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        rig.fake.fail("GET", 500)
        status, body = await press(rig, card_id, ALICE, "Staging")
        assert status == 200 and "press again" in body["value"]
        assert not asked.done.is_set()
