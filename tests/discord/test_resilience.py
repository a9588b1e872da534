"""The Discord channel when things go wrong or happen at once: rate limits, the Gateway asking to reconnect or
dropping, a restart of handraise, a press quicker than the bot's own bookkeeping, a fatal close."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.discord.gateway import Gateway, GatewayClosed
from bot.discord.rest import DiscordCallError, DiscordRest
from tests.bot.fakes import sync_store

from .fake_discord import APP_ID, TOKEN, fake_discord
from .rig import ALICE, discord_rig
from .test_answering import callback, checks, choice, control

pytestmark = pytest.mark.anyio


async def test_a_rate_limit_is_waited_out_before_the_one_retry(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        rig.fake.rate_limit("POST /channels/", retry_after=2.5)
        asked = rig.ask(choice())
        message = await rig.sent()
        assert rig.waits.seconds == [2.5]
        statuses = [call.status for call in rig.fake.calls if call.method == "POST" and "/channels/" in call.path]
        assert statuses == [429, 201, 200]  # the thread: limited, then made; then the question
        await rig.fake.click(message, control(rig, message, "Staging"), ALICE)
        await asked.answer()


async def test_a_second_429_fails_the_call_instead_of_retrying_again() -> None:
    async with fake_discord() as fake:
        waits: list[float] = []

        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        rest = DiscordRest(fake.url + "/api", TOKEN, sleep=sleep)
        fake.rate_limit("GET /users/@me", retry_after=0.25, times=2)
        with pytest.raises(DiscordCallError) as failed:
            await rest.call("GET", "/users/@me")
        await rest.close()
        assert failed.value.status == 429 and waits == [0.25]
        assert len(fake.calls) == 2


async def test_after_op_7_the_channel_resumes_and_answers_a_click_replayed_on_resume(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        session = rig.fake.session
        await rig.fake.reconnect()
        pressed = await rig.fake.click(message, control(rig, message, "Production"), ALICE)  # while away
        assert (await asked.answer()).answers[0].selected == ["Production"]
        assert (await callback(rig, pressed))["type"] == 6  # the fake refuses a callback later than 3 s
        assert rig.fake.resumed[0]["session_id"] == session.id
        assert len(rig.fake.identified) == 1 and rig.fake.gateway_urls[-1].startswith("/resume-gateway/?v=10")


async def test_a_resumable_close_resumes_and_an_invalid_session_identifies_afresh(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        await rig.fake.drop(4000)
        await rig.until(lambda: len(rig.fake.resumed) == 1 and rig.fake.session.socket is not None)
        assert len(rig.fake.identified) == 1
        await rig.fake.drop(4009)  # session timed out: it cannot be resumed
        await rig.until(lambda: len(rig.fake.identified) == 2)
        assert len(rig.fake.resumed) == 1


async def test_heartbeats_go_out_with_the_last_sequence() -> None:
    async with fake_discord(heartbeat_ms=20) as fake:
        rest = DiscordRest(fake.url + "/api", TOKEN)

        async def ignore(event: str, data: dict[str, Any]) -> None:
            pass

        gateway = Gateway(rest, TOKEN, ignore)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(gateway.run)
            await fake.until(lambda: bool(fake.connections) and len(fake.connections[0].heartbeats) >= 3)
            assert fake.connections[0].heartbeats[-1] == 1  # READY was event 1
            assert gateway.application_id == APP_ID
            await gateway.close()
        await rest.close()


async def test_a_fatal_close_stops_the_gateway_with_what_to_do(caplog: pytest.LogCaptureFixture) -> None:
    async with fake_discord() as fake:
        rest = DiscordRest(fake.url + "/api", TOKEN)

        async def ignore(event: str, data: dict[str, Any]) -> None:
            pass

        gateway = Gateway(rest, TOKEN, ignore)
        failures: list[GatewayClosed] = []

        async def run() -> None:
            try:
                await gateway.run()
            except GatewayClosed as failure:
                failures.append(failure)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await gateway.ready.wait()
            await fake.drop(4014)
            with anyio.fail_after(5):
                while not failures:
                    await anyio.sleep(0.01)
        await rest.close()
        assert "Message Content" in str(failures[0])
        assert TOKEN not in caplog.text


async def test_a_press_quicker_than_the_bookkeeping_still_answers(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        pressed: list[str] = []

        async def press_at_once(message: dict[str, Any]) -> None:
            if message["components"] and not pressed:
                first = message["components"][0]["components"][0]["custom_id"]
                pressed.append(await rig.fake.click(message["id"], first, ALICE))

        rig.fake.on_post = press_at_once
        asked = rig.ask(choice())
        assert (await asked.answer()).answers[0].selected == ["Staging"]
        assert (await callback(rig, pressed[0]))["type"] == 6


async def test_after_a_restart_old_buttons_and_thread_replies_answer_and_nothing_is_posted_again(
    tmp_path: Path,
) -> None:
    async with fake_discord() as fake:
        async with discord_rig(tmp_path, fake=fake) as rig:
            rig.ask(choice())
            first = await rig.sent()
            rig.ask(choice(id="region", question="Which region?"))
            second = await rig.sent(2)
            clicked = await fake.click(first, control(rig, first, "Staging"), ALICE)
            await callback(rig, clicked)
        thread = fake.messages[second]["channel_id"]
        posts = len(fake.calls_to("POST /channels/"))
        async with discord_rig(tmp_path, fake=fake) as rig:
            (pending,) = sync_store(rig.ledger.store).list_questions(status="pending")
            asked = rig.resume(pending)
            await fake.redeliver(clicked)  # the first press again, after the restart: recognised, not acted on
            await fake.post(thread, ALICE, "eu-west-1")
            assert (await asked.answer()).answers[0].custom == "eu-west-1"
            await fake.wait_for("PATCH /channels", 2)
            assert len(fake.calls_to("POST /channels/")) == posts
            assert len(fake.callbacks(clicked)) == 1


async def test_the_token_never_reaches_the_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with discord_rig(tmp_path) as rig:
        rig.fake.fail("POST /channels/", "Missing Access", status=403, code=50001, times=2)
        outcome = await rig.ask(choice()).result()
        assert "Missing Access" in str(outcome) and "Send Messages" in str(outcome)
        await rig.fake.drop(4000)
        await rig.until(lambda: len(rig.fake.resumed) == 1)
    assert TOKEN not in caplog.text


async def test_a_wrong_token_stops_the_channel_with_a_log_line_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.discord.channel import DiscordChannel
    from bot.discord.settings import DiscordSettings

    async with fake_discord() as fake:
        channel = DiscordChannel(DiscordSettings(api_url=fake.url + "/api"), token="not-the-token")
        with anyio.fail_after(5):
            await channel.run()  # returns: serve's other channels go on
        await channel.close()
        assert "authentication failed" in caplog.text and "not-the-token" not in caplog.text


async def test_a_multi_select_pick_made_before_a_restart_is_the_answer_on_submit_after_it(tmp_path: Path) -> None:
    async with fake_discord() as fake:
        async with discord_rig(tmp_path, fake=fake) as rig:
            rig.ask(checks())
            message = await rig.sent()
            (select,) = [item for item in fake.buttons(message) if item["type"] == 3]
            picked = await fake.choose(message, select["custom_id"], ["0", "2"], ALICE)
            assert (await callback(rig, picked))["type"] == 6
        async with discord_rig(tmp_path, fake=fake) as rig:
            (pending,) = sync_store(rig.ledger.store).list_questions(status="pending")
            asked = rig.resume(pending)
            await fake.click(message, control(rig, message, "Submit"), ALICE)
            assert (await asked.answer()).answers[0].selected == ["Unit tests", "Docs"]


async def test_a_click_being_handled_when_serve_stops_is_still_recorded_and_answered(tmp_path: Path) -> None:
    async with fake_discord() as fake:
        recording, stopping = anyio.Event(), anyio.Event()
        pressed = ""
        async with anyio.create_task_group() as outside, discord_rig(tmp_path, fake=fake) as rig:
            rig.ask(choice())
            message = await rig.sent()
            store: Any = rig.ledger.store
            durable = store.durable

            async def held_durable() -> None:  # the click is recorded; hold it until serve is stopping
                recording.set()
                await stopping.wait()
                await durable()

            async def stop_seen() -> None:
                while not rig.tasks.cancel_scope.cancel_called:
                    await anyio.sleep(0.001)
                stopping.set()

            store.durable = held_durable
            pressed = await fake.click(message, control(rig, message, "Production"), ALICE)
            await recording.wait()
            outside.start_soon(stop_seen)
        assert fake.callbacks(pressed) and fake.callbacks(pressed)[0]["type"] == 6
        async with discord_rig(tmp_path, fake=fake) as rig:
            (answered,) = sync_store(rig.ledger.store).list_questions(status="answered")
            assert answered.answer is not None and answered.answer.answers[0].selected == ["Production"]
