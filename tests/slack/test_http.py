"""Slack's requests over real HTTP at /slack/events, and bolt's signature check on both paths (401 when forged)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .payloads import block_actions, button, message_event
from .records import item
from .rig import served, slack_rig
from .signing import bolt_request, event_body, interactive_body, signed_headers

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"
YES_NO = item(options=["Yes (Recommended)", "No"])
CLICK = block_actions(button("hr.pick.0.1", "1"), ts=TS)


async def post(session: aiohttp.ClientSession, url: str, body: str, **signing: Any) -> tuple[int, str]:
    async with session.post(url, data=body.encode(), headers=signed_headers(body, **signing)) as response:
        return response.status, await response.text()


async def test_a_signed_click_over_http_answers_the_question(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        asked = rig.ask(YES_NO)
        await rig.posted()
        assert await post(session, url, interactive_body(CLICK)) == (200, "")
        assert (await asked.answer()).answers[0].selected == ["No"]
        await rig.fake.wait_for("chat.update")


async def test_a_signed_thread_reply_over_http_answers_the_question(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        asked = rig.ask(YES_NO)
        await rig.posted()
        status, _ = await post(session, url, event_body(message_event("yes", thread_ts=TS)))
        assert status == 200
        assert (await asked.answer()).answers[0].selected == ["Yes (Recommended)"]


async def test_slacks_url_verification_is_answered(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        body = json.dumps({"type": "url_verification", "challenge": "c0ffee", "token": "t"})
        status, text = await post(session, url, body)
        assert status == 200 and json.loads(text) == {"challenge": "c0ffee"}


FORGERIES: dict[str, dict[str, Any]] = {
    "wrong secret": {"secret": "not-the-signing-secret"},
    "older than five minutes": {"age": 330},
    "from the future": {"age": -330},
}


def forged(forgery: str) -> dict[str, Any]:
    signing = dict(FORGERIES[forgery])
    if "age" in signing:
        signing["timestamp"] = int(time.time()) - signing.pop("age")
    return signing


@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_forged_or_stale_request_is_refused_over_http(tmp_path: Path, forgery: str) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        rig.ask(YES_NO)
        await rig.posted()
        status, _ = await post(session, url, interactive_body(CLICK), **forged(forgery))
        assert status == 401
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


async def test_an_unsigned_or_tampered_request_is_refused_over_http(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        rig.ask(YES_NO)
        await rig.posted()
        body = interactive_body(CLICK)
        async with session.post(url, data=body, headers={"content-type": "application/x-www-form-urlencoded"}) as r:
            assert r.status == 401
        headers = signed_headers(body)
        tampered = interactive_body(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        async with session.post(url, data=tampered, headers=headers) as r:
            assert r.status == 401
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_forged_or_stale_request_is_refused_by_dispatch(tmp_path: Path, forgery: str) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        response = await rig.channel.app.async_dispatch(bolt_request(interactive_body(CLICK), **forged(forgery)))
        assert response.status == 401
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


async def test_a_click_on_a_message_handraise_never_recorded_is_logged_and_the_person_asked_to_try_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        with caplog.at_level(logging.WARNING, logger="bot.channels.replies"):
            click = interactive_body(block_actions(button("hr.pick.0.0", "0"), ts="1.0"))
            assert await post(session, url, click) == (200, "")
            (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"] == "handraise could not find this question yet; try again in a moment."
        (line,) = caplog.messages
        assert line.startswith("slack: a click on 'C0DEPLOY:1.0' matched no question")


async def test_garbage_from_slack_is_acknowledged_and_ignored(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig, served(rig.channel) as (url, session):
        rig.ask(YES_NO)
        await rig.posted()
        weird = CLICK | {"actions": [button("hr.pick.0.0", "0"), button("hr.pick.0.1", "1")]}
        assert (await post(session, url, interactive_body(weird)))[0] == 200
        assert (await post(session, url, interactive_body(CLICK | {"user": "U0ALICE"})))[0] == 200
        assert (await post(session, url, "payload=%7Bnot+json"))[0] == 400
        assert (await post(session, url, '{"type": 1'))[0] == 400
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]
