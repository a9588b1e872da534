"""Two-person approval in Slack: progress in the message and privately, the final list in the outcome, and one
person counting once even when Slack knows them by their email address."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from .payloads import block_actions, button
from .records import plan_review
from .rig import slack_rig, subscription

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"
PLAN = plan_review()


def approve() -> dict[str, Any]:
    """A click on Approve: each click is its own, with its own action_ts."""
    return button("hr.pick.0.0", "0")


async def test_the_first_approval_shows_progress_and_the_second_answers_naming_both(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(approvals=2)) as rig:
        asked = rig.ask(PLAN)
        await rig.posted()
        await rig.click(block_actions(approve(), ts=TS, user="U0ALICE"))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"] == "Your approval is recorded: 1 of 2 approvals: <@U0ALICE>."
        (progress,) = await rig.fake.wait_for("chat.update")
        assert "1 of 2 approvals: <@U0ALICE>" in progress["blocks"][-1]["elements"][-1]["text"]
        assert any(block["type"] == "actions" for block in progress["blocks"])  # still answerable
        await rig.click(block_actions(approve(), ts=TS, user="U0BOB"))
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Approve"]
        final = (await rig.fake.wait_for("chat.update", 2))[-1]
        outcome = "\n".join(b["text"]["text"] for b in final["blocks"] if b["type"] == "section")
        assert "*Answered* by <@U0ALICE>, <@U0BOB>" in outcome


async def test_one_person_clicking_approve_twice_counts_once(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(approvals=2)) as rig:
        rig.ask(PLAN)
        await rig.posted()
        await rig.click(block_actions(approve(), ts=TS, user="U0ALICE"))
        await rig.click(block_actions(approve(), ts=TS, user="U0ALICE"))
        told = await rig.fake.wait_for("chat.postEphemeral", 2)
        assert told[1]["text"] == "You had already approved this: 1 of 2 approvals: <@U0ALICE>."
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


async def test_a_slack_approval_is_counted_under_the_users_email_address(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(approvals=2)) as rig:
        rig.fake.emails["U0ALICE"] = "Alice@Example.org"
        rig.ask(PLAN)
        await rig.posted()
        await rig.click(block_actions(approve(), ts=TS, user="U0ALICE"))
        await rig.fake.wait_for("chat.postEphemeral")
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and [a.identity for a in record.approvals] == ["alice@example.org"]


async def test_reject_from_one_responder_ends_it_at_once(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(approvals=2)) as rig:
        asked = rig.ask(PLAN)
        await rig.posted()
        await rig.click(block_actions(approve(), ts=TS, user="U0ALICE"))
        await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS, user="U0BOB"))
        assert (await asked.answer()).answers[0].selected == ["Reject"]


async def test_a_reminder_is_posted_in_the_thread_mentioning_the_responders(tmp_path: Path) -> None:
    sub = subscription(responders=["U0BOB", "S0ONCALL"], remind_every="15m", remind_max=1)
    async with slack_rig(tmp_path, sub) as rig:
        rig.ask(PLAN)
        await rig.posted()
        await rig.until(lambda: rig.clock.sleepers == 1)  # the reminder waits for its time
        await rig.clock.advance(timedelta(minutes=15))
        reminder = await rig.posted(2)
        assert reminder["thread_ts"] == TS and reminder["channel"] == "C0DEPLOY"
        assert reminder["text"].startswith(":alarm_clock: <@U0BOB> <!subteam^S0ONCALL> Reminder 1:")
        await rig.clock.advance(timedelta(minutes=30))
        assert len(rig.fake.calls_to("chat.postMessage")) == 2  # remind_max = 1
