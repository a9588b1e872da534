"""A person (or an automation) who acts within a millisecond of the post, before handraise has recorded where the
question went: the click, menu choice or thread reply waits for the recording and answers the agent (one that
matches no question at all: `test_http.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .payloads import block_actions, button, message_event, radio
from .records import item
from .rig import SlackRig, slack_rig

pytestmark = pytest.mark.anyio

YES_NO = item(options=["Yes (Recommended)", "No"])


def act_at_once(rig: SlackRig, payload: Any) -> None:
    """Have the person act the moment the question's message is posted: before Slack's answer reaches handraise."""

    async def on_post(channel: str, ts: str) -> None:
        rig.fake.on_post = None
        await payload(channel, ts)
        await rig.until(lambda: rig.channel.replies.awaiting == 1)  # handraise has it, and waits for the recording

    rig.fake.on_post = on_post


@pytest.mark.parametrize("action", [button("hr.pick.0.1", "1"), radio("hr.choose.0", 1)], ids=["button", "menu choice"])
async def test_a_click_within_a_millisecond_of_the_post_answers_the_agent(
    tmp_path: Path, action: dict[str, Any]
) -> None:
    async with slack_rig(tmp_path) as rig:

        async def click(channel: str, ts: str) -> None:
            await rig.click(block_actions(action, channel=channel, ts=ts))

        act_at_once(rig, click)
        asked = rig.ask(YES_NO)
        assert (await asked.answer()).answers[0].selected == ["No"]
        assert rig.fake.calls_to("chat.postEphemeral") == []  # nobody was told it is no longer open


async def test_a_thread_reply_within_a_millisecond_of_the_post_answers_the_agent(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:

        async def reply(channel: str, ts: str) -> None:
            await rig.event(message_event("2", channel=channel, thread_ts=ts))

        act_at_once(rig, reply)
        asked = rig.ask(YES_NO)
        assert (await asked.answer()).answers[0].selected == ["No"]
