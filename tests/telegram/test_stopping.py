"""SIGTERM in the middle of a tap: `serve` finishes it (recorded, then acknowledged with answerCallbackQuery) before
it exits, or leaves it unconfirmed so that Telegram delivers it again. Never acknowledged and lost, never lost and
unacknowledged: in polling mode the offset is not moved past what was not handled, and in webhook mode nothing is
answered 200 before it is recorded."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.store.sqlite.store import Store
from bot.telegram.updates import SECRET_HEADER, WEBHOOK_PATH
from tests.fake_clock import FakeClock

from .fake_telegram import FakeTelegram, fake_telegram
from .rig import ALICE, BOB, telegram_rig
from .serving import WEBHOOK_SECRET, Served, serving
from .test_answering import choice

pytestmark = pytest.mark.anyio

QUESTION = {"id": "env", "question": "Deploy where?", "options": [{"label": "Staging"}, {"label": "Production"}]}


def production(fake: FakeTelegram, where: tuple[int, int]) -> str:
    return next(data for text, data in fake.buttons(*where) if "Production" in text)


async def question_message(fake: FakeTelegram) -> tuple[int, int]:
    await fake.wait_for("sendMessage")
    (where,) = fake.messages
    return where


async def stop_and_hold(served: Served) -> None:
    """SIGTERM, and check that serve does not exit while the tap it has begun is held up."""
    served.process.send_signal(signal.SIGTERM)
    await served.line("received SIGTERM")
    with anyio.move_on_after(0.5):  # time to exit, were it to leave the tap unfinished
        await served.process.wait()
    assert served.process.returncode is None


async def exited(served: Served) -> str:
    with anyio.fail_after(30):
        assert await served.process.wait() == 0
    output = "\n".join(served.lines)
    assert "Traceback" not in output and "could not show the outcome" not in output
    return output


def answer_of(served: Served, question_id: str) -> list[str]:
    with Store.open(served.store) as store:
        record = store.get_question(question_id)
    assert record is not None and record.status == "answered" and record.answer is not None
    return record.answer.answers[0].selected


async def test_polling_serve_stopped_mid_tap_records_and_acknowledges_it_before_it_exits(tmp_path: Path) -> None:
    async with fake_telegram() as fake, serving(tmp_path, fake) as served:
        question_id = await served.ask(QUESTION)
        where = await question_message(fake)
        acknowledged = fake.stall("answerCallbackQuery")
        update_id = fake.tap(*where, ALICE, production(fake, where))
        await fake.wait_for("answerCallbackQuery")  # the tap is in flight: its acknowledgement not yet answered
        await stop_and_hold(served)
        acknowledged.set()
        await exited(served)
        assert answer_of(served, question_id) == ["Production"]
        # Not confirmed to Telegram (no getUpdates past it), so it comes again after a restart: seen, not repeated.
        assert update_id in [update["update_id"] for update in fake.updates]
        with Store.open(served.store) as store:
            assert not store.first_sight("telegram", str(update_id))


async def post(url: str, update: dict[str, Any]) -> int:
    headers = {"Content-Type": "application/json", SECRET_HEADER: WEBHOOK_SECRET}
    async with aiohttp.ClientSession() as session, session.post(url, data=json.dumps(update), headers=headers) as r:
        return r.status


def tap_update(fake: FakeTelegram, where: tuple[int, int], update_id: int, who: dict[str, Any]) -> dict[str, Any]:
    message = fake.messages[where]
    query = {"id": f"cq{update_id}", "from": who, "message": message, "chat_instance": "ci", "data": "p:0:1"}
    return {"update_id": update_id, "callback_query": query}


async def test_webhook_serve_stopped_mid_tap_answers_200_only_once_it_is_recorded_and_acknowledged(
    tmp_path: Path,
) -> None:
    async with fake_telegram() as fake, serving(tmp_path, fake, webhook=True) as served:
        url = served.base_url + WEBHOOK_PATH
        question_id = await served.ask(QUESTION)
        where = await question_message(fake)
        acknowledged = fake.stall("answerCallbackQuery")
        statuses: list[int] = []
        async with anyio.create_task_group() as tasks:

            async def first_tap() -> None:
                statuses.append(await post(url, tap_update(fake, where, 9001, ALICE)))

            tasks.start_soon(first_tap)
            await fake.wait_for("answerCallbackQuery")
            await stop_and_hold(served)
            await served.line("telegram: stopping; finishing 1 update(s) begun")
            # Once stopping, a new update is turned away unread: Telegram keeps it and posts it again later.
            assert await post(url, tap_update(fake, where, 9002, BOB)) == 503
            assert statuses == []  # the first is not answered 200 while its acknowledgement is in flight
            acknowledged.set()
        assert statuses == [200]
        await exited(served)
        assert answer_of(served, question_id) == ["Production"]
        assert [call["callback_query_id"] for call in fake.calls_to("answerCallbackQuery")] == ["cq9001"]
        with Store.open(served.store) as store:
            assert store.first_sight("telegram", "9002")  # never marked seen: acted on when Telegram posts it again


async def test_stopping_mid_batch_finishes_the_tap_begun_and_leaves_the_rest_for_telegram_to_send_again(
    tmp_path: Path,
) -> None:
    first = second = 0
    question_id, clock = "", FakeClock()
    async with fake_telegram() as fake, anyio.create_task_group() as outer:
        async with telegram_rig(tmp_path, fake=fake) as rig:
            rig.ask(choice())
            where = await rig.sent()
            question_id, clock = rig.question_id(), rig.clock
            acknowledged = fake.stall("answerCallbackQuery")
            first = fake.tap(*where, ALICE, production(fake, where))
            second = fake.reply(*where, BOB, "this comes after the tap")  # in the same getUpdates batch
            await fake.wait_for("answerCallbackQuery")

            async def acknowledge_once_stopping() -> None:
                await rig.until(lambda: rig.ledger.closing)
                await anyio.sleep(0.3)  # time to stop, were stopping to leave the tap unfinished
                acknowledged.set()

            outer.start_soon(acknowledge_once_stopping)
        # The rig stopped as serve does (the poll cancelled mid-tap, then the channel closed), and only once the
        # tap was acknowledged.
        assert acknowledged.is_set()
        assert [update["update_id"] for update in fake.updates] == [first, second]  # neither confirmed
    with Store.open(tmp_path / "handraise.db") as store:
        record = store.get_question(question_id)
        assert record is not None and record.answer is not None
        assert record.answer.answers[0].selected == ["Production"]
        # The tap is kept as seen: not acted on again when it comes again. The reply was never begun: it will be.
        assert not store.first_sight("telegram", str(first), now=clock.now())
        assert store.first_sight("telegram", str(second), now=clock.now())
