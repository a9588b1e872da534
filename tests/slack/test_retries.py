"""Slack's re-deliveries through the real bolt app, over signed HTTP and the Socket Mode handler: an event is acted on
once, across restarts, and a thread reply never answers a question posted after it.

Slack retries an event whose acknowledgement was slow, with the same `event_id` and `X-Slack-Retry-Num`; by then the
agent may have asked its next question in the same thread. Each test ends with a fresh reply (the sentinel) that
answers the newer question, so a retry that wrongly answered it first would show as the wrong answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from ..bot.fakes import sync_store
from .payloads import block_actions, button, message_event
from .records import item
from .rig import APP_TOKEN, SlackRig, served, slack_rig
from .signing import event_body, signed_headers

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"  # the first question, and the root of the agent's thread
RETRY = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
YES_NO = item(options=["Yes (Recommended)", "No"])
LATE = "1700000900.000001"
"""A reply ts later than any question in these tests: only the event id can then tell a retry from a new reply."""


def selected(answer: Any) -> list[str]:
    return answer.answers[0].selected


async def ask_next_in_the_thread(rig: SlackRig, count: int) -> Any:
    """The agent's next question (the `count`-th posted), once it is in the agent's thread and in the store."""
    asked = rig.ask(YES_NO)
    post = await rig.posted(count)
    assert post["thread_ts"] == TS
    await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(channel="slack")) == count)
    return asked


async def post_event(session: aiohttp.ClientSession, url: str, payload: dict[str, Any], **headers: str) -> int:
    body = event_body(payload)
    async with session.post(url, data=body.encode(), headers=signed_headers(body) | headers) as response:
        return response.status


async def test_a_retried_reply_does_not_answer_the_question_asked_after_it(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        first = rig.ask(YES_NO)
        await rig.posted()
        reply = message_event("yes", thread_ts=TS, ts=rig.fake.message_ts(), event_id="Ev0SLOWACK")
        assert await post_event(session, url, reply) == 200
        assert selected(await first.answer()) == ["Yes (Recommended)"]
        second = await ask_next_in_the_thread(rig, 2)
        assert await post_event(session, url, reply, **RETRY) == 200
        sentinel = message_event("no", thread_ts=TS, ts=rig.fake.message_ts())
        assert await post_event(session, url, sentinel) == 200
        assert selected(await second.answer()) == ["No"]


async def test_a_retry_is_recognised_after_a_restart(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as before:
        first = before.ask(YES_NO)
        await before.posted()
        reply = message_event("yes", thread_ts=TS, ts=LATE, event_id="Ev0BEFORERESTART")
        await before.event(reply)
        assert selected(await first.answer()) == ["Yes (Recommended)"]
        await before.fake.wait_for("chat.update")
        async with slack_rig(tmp_path, fake=before.fake) as after:  # a new process: new app, new store connection
            second = await ask_next_in_the_thread(after, 2)
            await after.event(reply, headers=RETRY)
            await after.event(message_event("no", thread_ts=TS, ts=LATE))
            assert selected(await second.answer()) == ["No"]


async def test_an_old_reply_delivered_as_a_new_event_does_not_answer_a_newer_question(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        first = rig.ask(YES_NO)
        await rig.posted()
        old = rig.fake.message_ts()
        await rig.event(message_event("yes", thread_ts=TS, ts=old))
        assert selected(await first.answer()) == ["Yes (Recommended)"]
        second = await ask_next_in_the_thread(rig, 2)
        await rig.event(message_event("yes", thread_ts=TS, ts=old))  # a fresh event_id, the old message
        await rig.event(message_event("no", thread_ts=TS, ts=rig.fake.message_ts()))
        assert selected(await second.answer()) == ["No"]


async def test_a_reply_posted_between_two_questions_answers_the_earlier_one(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        first = rig.ask(YES_NO)
        await rig.posted()
        between = rig.fake.message_ts()
        second = await ask_next_in_the_thread(rig, 2)
        await rig.event(message_event("yes", thread_ts=TS, ts=between))
        assert selected(await first.answer()) == ["Yes (Recommended)"]
        await rig.event(message_event("no", thread_ts=TS, ts=rig.fake.message_ts()))
        assert selected(await second.answer()) == ["No"]


async def test_a_reply_without_a_valid_ts_answers_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        for ts in ("", "now", "1700000900", "1700000900.0000001", "-1700000900.000001", "9" * 40 + ".1"):
            await rig.event(message_event("yes", thread_ts=TS, ts=ts))
        await rig.event(message_event("no", thread_ts=TS, ts=rig.fake.message_ts()))
        assert selected(await asked.answer()) == ["No"]


async def test_a_re_delivered_click_is_acted_on_once(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        click = block_actions(button("hr.pick.0.1", "1", at="1700000950.000001"), ts=TS)
        await rig.click(click)
        assert selected(await asked.answer()) == ["No"]
        await rig.click(click)  # the same click again: nothing to say
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))  # a new click: told it is answered
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("This question was already answered by <@U0ALICE>")


# --- Socket Mode ----------------------------------------------------------------------------------------------------


class SocketRecorder:
    """Stands in for the Socket Mode websocket client: records the acknowledgements the handler sends back."""

    def __init__(self, logger: Any) -> None:
        self.logger = logger
        self.acknowledged: list[str] = []

    async def send_socket_mode_response(self, response: SocketModeResponse) -> None:
        self.acknowledged.append(response.envelope_id)


def envelope(payload: dict[str, Any], envelope_id: str, *, retry: int | None = None) -> SocketModeRequest:
    reason = "timeout" if retry else None
    return SocketModeRequest("events_api", envelope_id, payload, retry_attempt=retry, retry_reason=reason)


async def test_a_retry_over_socket_mode_is_recognised_too(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, mode="socket") as rig:
        handler = AsyncSocketModeHandler(rig.channel.app, APP_TOKEN, web_client=rig.channel.transport.client)
        socket = SocketRecorder(handler.client.logger)
        try:
            first = rig.ask(YES_NO)
            await rig.posted()
            reply = message_event("yes", thread_ts=TS, ts=LATE, event_id="Ev0SOCKET")
            await handler.handle(socket, envelope(reply, "env-1"))  # type: ignore[arg-type]
            assert selected(await first.answer()) == ["Yes (Recommended)"]
            second = await ask_next_in_the_thread(rig, 2)
            await handler.handle(socket, envelope(reply, "env-2", retry=1))  # type: ignore[arg-type]
            sentinel = message_event("no", thread_ts=TS, ts=LATE)
            await handler.handle(socket, envelope(sentinel, "env-3"))  # type: ignore[arg-type]
            assert selected(await second.answer()) == ["No"]
            assert socket.acknowledged == ["env-1", "env-2", "env-3"]
        finally:
            await handler.client.close()
