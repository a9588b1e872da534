"""Status notes in Telegram: a message in the route's chat (the agent's topic), replying to the agent's last question
there, with no keyboard; the agent's words escaped so that they can neither format nor mention anyone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.api.notes import StatusNotes
from bot.questions.status_note import NoteEvent, StatusNote
from bot.store.records import AgentRef
from bot.telegram.notes import render_note

from ..bot.fakes import sync_store
from ..slack.records import item
from .rig import CHAT, TelegramRig, subscription, telegram_rig

pytestmark = pytest.mark.anyio


def note(event: NoteEvent = "finished", text: str | None = None, **agent: Any) -> StatusNote:
    """A note from the rig's agent (`deploy-7`, named deploy-bot), working on billing-api."""
    ref = {"id": "deploy-7", "name": "deploy-bot", "labels": {"project": "billing-api"}} | agent
    return StatusNote(agent=AgentRef.model_validate(ref), event=event, text=text)


async def ask_first(rig: TelegramRig, sent_before: int = 0) -> tuple[int, int]:
    """Ask a question; its (chat, message id), which comes after `sent_before` other messages, once its delivery is
    recorded (a note looks it up)."""
    rig.ask(item(options=["Yes", "No"]))
    where = await rig.sent(sent_before + 1)
    store = sync_store(rig.ledger.store)
    await rig.until(lambda: any(store.get_delivery(q.id, "telegram") for q in store.list_questions()))
    return where


async def test_a_note_replies_to_the_agents_last_question(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        where = await ask_first(rig)
        shown = await StatusNotes(rig.ledger).post(note("finished", "All 112 tests pass."))
        sent = (await rig.fake.wait_for("sendMessage", 2))[1]
    assert shown == ["telegram"]
    assert int(sent["chat_id"]) == CHAT
    assert sent["text"] == "deploy-bot · billing-api: finished\nAll 112 tests pass."
    assert sent["reply_parameters"]["message_id"] == where[1]
    assert "reply_markup" not in sent


async def test_a_note_before_any_question_is_a_plain_message_in_the_chat(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        assert await StatusNotes(rig.ledger).post(note("waiting")) == ["telegram"]
        (sent,) = await rig.fake.wait_for("sendMessage")
    assert sent["text"] == "deploy-bot · billing-api: waiting for you"
    assert "reply_parameters" not in sent and "message_thread_id" not in sent


async def test_with_a_topic_per_agent_the_note_goes_in_the_agents_topic(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(topic="agent")) as rig:
        where = await ask_first(rig)
        topic = rig.message(where)["message_thread_id"]
        await StatusNotes(rig.ledger).post(note())
        sent = (await rig.fake.wait_for("sendMessage", 2))[1]
    assert int(sent["message_thread_id"]) == topic
    assert len(rig.fake.calls_to("createForumTopic")) == 1


async def test_a_note_opens_the_agents_topic_that_its_questions_then_use(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(topic="agent")) as rig:
        await StatusNotes(rig.ledger).post(note("waiting"))
        (first,) = await rig.fake.wait_for("sendMessage")
        where = await ask_first(rig, sent_before=1)
    assert rig.message(where)["message_thread_id"] == int(first["message_thread_id"])
    assert len(rig.fake.calls_to("createForumTopic")) == 1


async def test_a_note_from_an_agent_routed_elsewhere_is_not_sent(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(labels={"team": "ops"})) as rig:
        assert await StatusNotes(rig.ledger).post(note()) == []
    assert rig.fake.calls_to("sendMessage") == []


async def test_a_telegram_failure_loses_the_note_only(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.fake.fail("sendMessage", "Bad Request: chat not found")
        assert await StatusNotes(rig.ledger).post(note()) == []
        assert await rig.ledger.store.list_questions() == []


def test_the_agents_words_can_neither_format_nor_mention() -> None:
    hostile = note("finished", '<a href="tg://user?id=1">boss</a> @everyone_here & <b>done</b>', name="@admin_bot")
    assert render_note(hostile) == (
        "@\u2060admin_bot · billing-api: finished\n"
        '&lt;a href="tg://user?id=1"&gt;boss&lt;/a&gt; @\u2060everyone_here &amp; &lt;b&gt;done&lt;/b&gt;'
    )


def test_a_long_detail_is_cut() -> None:
    shown = render_note(note("finished", "word " * 1_000))
    assert len(shown) < 1_400 and shown.endswith("…")
