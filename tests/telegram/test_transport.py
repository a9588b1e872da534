"""Telegram's side of things: 429s and their retry_after, refusals that name Telegram's reason, polling through
failures, a restart with a question pending, updates acted on once, and garbage updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.channels.base import DeliveryError
from bot.store.records import QuestionRecord
from bot.telegram.transport import TelegramCallError, TelegramTransport, make_bot
from core import AskUserQuestionItem, AskUserQuestionOption, UserQuestionError

from .fake_telegram import BOT_ID, TOKEN, fake_telegram, user
from .rig import ALICE, CHAT, TelegramRig, Waits, subscription, telegram_rig
from .test_answering import checks, choice, free, press

pytestmark = pytest.mark.anyio


async def test_a_429_waits_for_retry_after_and_sends_again(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.fake.rate_limit("sendMessage", retry_after=7)
        rig.ask(choice())
        await rig.sent()
        assert rig.waits.seconds == [7.0]
        assert [call.status for call in rig.fake.calls if call.method == "sendMessage"] == [429, 200]


async def test_a_retry_after_longer_than_a_call_may_take_fails_the_delivery_at_once(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.fake.rate_limit("sendMessage", retry_after=3600)
        outcome = await rig.ask(choice()).result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == DeliveryError.code
        assert "rate_limited (retry after 3600s)" in outcome.message
        assert "try again shortly" in outcome.message
        assert rig.waits.seconds == []


async def test_a_429_on_a_tap_is_retried(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        rig.fake.rate_limit("answerCallbackQuery", retry_after=2)
        press(rig, where, ALICE, "Staging")
        await asked.answer()
        await rig.fake.wait_for("answerCallbackQuery")
        assert 2.0 in rig.waits.seconds


async def test_an_unknown_chat_fails_the_ask_naming_telegrams_reason_and_what_to_do(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, subscription(chat="@nowhere_at_all")) as rig:
        outcome = await rig.ask(choice()).result()
        assert isinstance(outcome, UserQuestionError) and outcome.code == DeliveryError.code
        assert outcome.message.startswith("telegram: cannot send to @nowhere_at_all: Chat not found")
        assert "the bot must be a member of the group" in outcome.message
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "failed"


async def test_a_question_too_big_for_telegram_fails_the_ask_saying_why(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        options = [AskUserQuestionOption(label=f"option {n}") for n in range(61)]
        outcome = await rig.ask(AskUserQuestionItem(id="many", question="Which?", options=options)).result()
        assert isinstance(outcome, UserQuestionError) and "a Telegram keyboard holds at most 60" in outcome.message
        assert rig.fake.calls_to("sendMessage") == []


async def test_polling_goes_on_after_telegram_fails_a_poll(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.fake.fail("getUpdates", "Internal Server Error", status=500, times=6)
        asked = rig.ask(choice())
        where = await rig.sent()
        press(rig, where, ALICE, "Staging")
        assert (await asked.answer()).answers[0].selected == ["Staging"]
        assert [call.status for call in rig.fake.calls if call.method == "getUpdates"][:6] == [500] * 6


async def _pending_after_a_restart(tmp_path: Path, rig: TelegramRig) -> QuestionRecord:
    record = QuestionRecord(questions=[choice()], origin="api", created_at=rig.clock.now())
    await rig.ledger.store.create_question(record)
    rig.resume(record)
    await rig.sent()
    return record


async def test_a_question_pending_over_a_restart_is_answered_on_its_first_message(tmp_path: Path) -> None:
    async with fake_telegram() as fake:
        async with telegram_rig(tmp_path, fake=fake) as first:
            record = await _pending_after_a_restart(tmp_path, first)
            where = await first.sent()
        async with telegram_rig(tmp_path, fake=fake) as second:
            stored = await second.ledger.store.get_question(record.id)
            assert stored is not None and stored.status == "pending"
            asked = second.resume(stored)
            press(second, where, ALICE, "Production")
            assert (await asked.answer()).answers[0].selected == ["Production"]
            assert len(fake.calls_to("sendMessage")) == 1  # not sent again
            await second.until(lambda: "reply_markup" not in fake.messages[where])


async def test_an_update_delivered_again_after_a_restart_is_acted_on_once(tmp_path: Path) -> None:
    async with fake_telegram() as fake:
        async with telegram_rig(tmp_path, fake=fake) as first:
            first.ask(checks())
            where = await first.sent()
            update_id = press(first, where, ALICE, "Lint")
            await fake.wait_for("editMessageReplyMarkup")
            replayed = {
                "update_id": update_id,
                "callback_query": {
                    "id": "again",
                    "from": ALICE,
                    "message": dict(fake.messages[where]),
                    "chat_instance": "ci",
                    "data": next(data for text, data in fake.buttons(*where) if text == "Docs"),
                },
            }
        async with telegram_rig(tmp_path, fake=fake) as second:
            fake.push(replayed)
            fake.push({"message": {"message_id": 1, "date": 1, "chat": {"id": 5, "type": "private"}, "text": "hi"}})
            await second.until(lambda: not fake.updates)  # both confirmed, so both handled
            assert len(fake.calls_to("editMessageReplyMarkup")) == 1
            assert "again" not in [call["callback_query_id"] for call in fake.calls_to("answerCallbackQuery")]


GARBAGE = [
    {"callback_query": {"id": "g1", "from": ALICE, "chat_instance": "ci", "data": "p:0:0"}},  # no message
    {"callback_query": {"id": "g2", "from": ALICE, "chat_instance": "ci", "data": "x" * 5000}},
    {"callback_query": {"id": "g3", "from": ALICE, "chat_instance": "ci", "data": "t:0:0:ffffffffffffffff"}},
    {"message": {"message_id": 9, "date": 1, "chat": {"id": CHAT, "type": "supergroup"}, "from": ALICE}},
    {"message": {"message_id": 10, "date": 1, "chat": {"id": CHAT, "type": "supergroup"}, "text": "no sender"}},
    {"edited_message": {"message_id": 11, "date": 1, "chat": {"id": CHAT, "type": "supergroup"}, "text": "2"}},
    {
        "message": {
            "message_id": 12,
            "date": 1,
            "chat": {"id": CHAT, "type": "supergroup"},
            "from": user(7, "Eve"),
            "text": "2",
            "reply_to_message": {
                "message_id": 3,
                "date": 1,
                "chat": {"id": CHAT, "type": "supergroup"},
                "from": user(8, "Someone"),
                "text": "ref 100/1",
            },
        }
    },
]


async def test_garbage_and_hostile_updates_change_nothing_and_polling_goes_on(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        where = await rig.sent()
        for update in GARBAGE:
            rig.fake.push(dict(update))
        forged = rig.fake.tap(*where, ALICE, "t:0:1:3")  # a toggle on a single-select question
        await rig.until(lambda: not rig.fake.updates or rig.fake.updates[0]["update_id"] > forged)
        assert not asked.done.is_set()
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "pending"
        press(rig, where, ALICE, "Staging")
        assert (await asked.answer()).answers[0].selected == ["Staging"]


async def test_html_in_agent_text_shows_literally(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        hostile = '<a href="https://evil.example">click</a> & <b>bold</b>'
        asked = rig.ask(AskUserQuestionItem(id="q", question=hostile, detail="</blockquote><i>x</i>"))
        where = await rig.sent()
        text = rig.message(where)["text"]
        assert '&lt;a href="https://evil.example"&gt;click&lt;/a&gt; &amp; &lt;b&gt;bold&lt;/b&gt;' in text
        assert 'evil.example">' not in text.replace("&gt;", "")
        assert "<blockquote expandable>&lt;/blockquote&gt;&lt;i&gt;x&lt;/i&gt;</blockquote>" in text
        rig.fake.reply(*where, ALICE, "<b>mine</b>")
        await asked.answer()
        await rig.until(lambda: "reply_markup" not in rig.message(where) and "mine" in rig.message(where)["text"])
        assert "“&lt;b&gt;mine&lt;/b&gt;”" in rig.message(where)["text"]


async def test_a_reply_to_a_message_that_is_not_the_bots_answers_nothing(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        asked = rig.ask(free())
        where = await rig.sent()
        fake_message = dict(rig.fake.messages[where]) | {"from": user(BOT_ID + 1, "Impostor")}
        rig.fake.push(
            {
                "message": {
                    "message_id": 77,
                    "date": 1,
                    "chat": fake_message["chat"],
                    "from": ALICE,
                    "text": "Aurora",
                    "reply_to_message": fake_message,
                }
            }
        )
        rig.fake.reply(*where, ALICE, "Borealis")
        assert (await asked.answer()).answers[0].custom == "Borealis"  # the impostor's reply, first, counted not


async def test_an_unreachable_telegram_fails_the_ask_after_bounded_retries(tmp_path: Path) -> None:
    async with fake_telegram() as fake:
        closed = fake.url  # the fake stops below: nothing listens there any more
    waits = Waits()
    transport = TelegramTransport(make_bot(TOKEN, closed), sleep=waits, retries=2, backoff=0.5)
    with pytest.raises(TelegramCallError, match="connection_failed") as caught:
        await transport.send(CHAT, "hello")
    assert caught.value.method == "getMe" and waits.seconds == [0.5, 1.0]
    await transport.close()


async def test_a_refused_start_is_logged_and_retried_not_a_crash(tmp_path: Path) -> None:
    async with fake_telegram() as fake:
        fake.fail("deleteWebhook", "Unauthorized", status=401, times=2)
        async with telegram_rig(tmp_path, fake=fake) as rig:
            asked = rig.ask(choice())
            where = await rig.sent()
            press(rig, where, ALICE, "Staging")
            assert (await asked.answer()).answers[0].selected == ["Staging"]
            assert rig.waits.seconds[:2] == [5.0, 5.0]
