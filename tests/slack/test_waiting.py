"""`/handraise` lists the questions waiting for the person who types it, and mentions page user groups."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bot.slack.render import render_question
from tests.bot.fakes import sync_store

from .payloads import block_actions, button
from .records import item, record
from .rig import SlackRig, slack_rig, subscription
from .signing import bolt_request

pytestmark = pytest.mark.anyio


async def command(rig: SlackRig, user: str) -> str:
    body = urlencode(
        {"command": "/handraise", "text": "", "user_id": user, "channel_id": "C0DEPLOY", "team_id": "T0TEAM"}
    )
    response = await rig.channel.app.async_dispatch(bolt_request(body))
    assert response.status == 200
    reply = json.loads(response.body)
    assert reply["response_type"] == "ephemeral"
    return str(reply["text"])


async def test_the_command_lists_the_questions_i_may_answer_with_links(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["U0ALICE"])) as rig:
        rig.ask(item("Deploy v2 to production?", options=["Yes", "No"]))
        await rig.posted()
        await rig.until(lambda: sync_store(rig.ledger.store).get_delivery(rig.question_id(), "slack") is not None)
        text = await command(rig, "U0ALICE")
        assert text.startswith(
            "*1 question waiting for you:*\n• <https://slack.com/archives/C0DEPLOY/p1700000000000001|"
        )
        assert "Deploy v2 to production?> — asked by deploy-bot <!date^" in text
        assert await command(rig, "U0MALLORY") == "Nothing is waiting for you in handraise. :tada:"


async def test_an_answered_question_is_no_longer_listed(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(item(options=["Yes", "No"]))
        await rig.posted()
        await rig.until(lambda: sync_store(rig.ledger.store).get_delivery(rig.question_id(), "slack") is not None)
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts="1700000000.000001"))
        await asked.answer()
        assert await command(rig, "U0ALICE") == "Nothing is waiting for you in handraise. :tada:"


def test_a_user_group_in_mention_is_paged_as_the_group() -> None:
    message = render_question(record(item()), mentions=["S0ONCALL", "U0BOB"])
    assert message.text.startswith("<!subteam^S0ONCALL> <@U0BOB> ")


def test_mention_accepts_user_group_ids_in_the_config() -> None:
    assert subscription(mention=["S0ONCALL"]).mention == ["S0ONCALL"]


async def test_a_user_group_that_cannot_be_read_is_asked_for_once_per_command(tmp_path: Path) -> None:
    # Slack wants the command's answer within 3 s; each failed read may take seconds, so one per question is too many.
    async with slack_rig(tmp_path, subscription(responders=["S0ONCALL"])) as rig:
        for number in range(3):
            rig.ask(item(f"Question {number}?", options=["Yes", "No"]))
        await rig.posted(3)
        await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(status="pending")) == 3)
        await rig.until(
            lambda: all(
                sync_store(rig.ledger.store).get_delivery(record.id, "slack") is not None
                for record in sync_store(rig.ledger.store).list_questions(status="pending")
            )
        )
        rig.fake.fail("usergroups.users.list", "missing_scope", times=10)
        assert await command(rig, "U0BOB") == "Nothing is waiting for you in handraise. :tada:"
        assert len(rig.fake.calls_to("usergroups.users.list")) == 1
