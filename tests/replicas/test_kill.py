"""kill -9 a replica with questions pending, timers due and a Slack delivery in flight: the others take its questions
over within the lease, every question ends exactly once, every timer fires once, and nothing is lost."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio
import pytest

from tests.slack.fake_slack import TOKEN, fake_slack
from tests.slack.payloads import message_event
from tests.slack.signing import SECRET

from .conftest import Query
from .harness import ReplicaSet, replica_set

pytestmark = pytest.mark.anyio

TIMER = 4
"""Seconds until the escalation and expiry timers are due: after the kill, so the replica that set them is dead."""
TAKEN_OVER_WITHIN = 30
"""Far more than a lease (2 s) and the timers: what the whole take-over may take on a loaded machine."""
SLACK_DELIVERY = "SELECT key FROM deliveries WHERE question_id = %s AND channel = 'slack'"


def config(slack_url: str) -> str:
    return f"""
[bot]
answerers = ["web", "slack"]

[[web.subscriptions]]
agents = ["wait-*"]

[[web.subscriptions]]
agents = ["expire-*"]
expire_after = "{TIMER}s"

[[web.subscriptions]]
agents = ["escalate-*"]
escalate_after = "{TIMER}s"

[slack]
mode = "http"
api_url = "{slack_url}"

[[slack.subscriptions]]
agents = ["escalate-*", "slack-*"]
channel = "C0DEPLOY"
thread = "request"
"""


async def test_a_killed_replicas_questions_end_once_and_its_timers_fire_once_on_the_others(
    tmp_path: Path, postgres_url: str, database: Query
) -> None:
    async with fake_slack() as slack:
        env = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET}
        async with replica_set(tmp_path, postgres_url, 3, config=config(slack.url), env=env) as group:
            a, b, c = group.replicas
            waiting = [await group.ask(a, f"Wait {n}?", agent=f"wait-{n}") for n in range(3)]
            expiring = [await group.ask(a, f"Expire {n}?", agent=f"expire-{n}") for n in range(2)]
            escalating = [await group.ask(a, f"Escalate {n}?", agent=f"escalate-{n}") for n in range(2)]
            for question_id in waiting + expiring + escalating:
                await group.until_in_inbox(b, question_id)
            in_flight = slack.stall("chat.postMessage")
            posting = await group.ask(a, "Post me?", agent="slack-1")
            await slack.wait_for("chat.postMessage")  # Slack has it; `a` waits for the reply
            await a.kill()
            in_flight.set()

            with anyio.fail_after(TAKEN_OVER_WITHIN):
                for question_id in expiring:
                    assert await _outcome(group, question_id) == "expired"
                await slack.wait_for("chat.postMessage", 1 + len(escalating), seconds=TAKEN_OVER_WITHIN)
                while not (posted := await database(SLACK_DELIVERY, posting)):
                    await anyio.sleep(0.05)  # recorded by the replica that took the question over
            for question_id in waiting + escalating:
                assert await group.answer_in_inbox(c, question_id) == 303
            conversation, ts = str(posted[0][0]).split(":")
            reply = message_event("yes", channel=conversation, thread_ts=ts, ts=slack.message_ts())
            assert await group.slack_event(b, reply) == 200
            for question_id in [*waiting, *escalating, posting]:
                assert await _outcome(group, question_id) == "answered"
            audit = Counter(await database("SELECT question_id, kind FROM audit"))
            everything = [*waiting, *expiring, *escalating, posting]
            for question_id in everything:
                ended = sum(audit[question_id, kind] for kind in ("answered", "expired", "cancelled", "failed"))
                assert ended == 1, question_id
            for question_id in escalating:
                assert audit[question_id, "escalated"] == 1, question_id
            posts = Counter(_asking(post) for post in slack.calls_to("chat.postMessage"))
            assert posts["Escalate 0?"] == posts["Escalate 1?"] == 1, posts
            assert posts["Post me?"] == 1, posts  # found by its metadata after the kill, not posted again
            assert [b.alive, c.alive] == [True, True]


async def _outcome(group: ReplicaSet, question_id: str) -> str:
    """The question's status once it ends, long-polling the surviving replicas in turn as an agent re-polls."""
    while True:
        for replica in group.replicas[1:]:
            status, body = await group.poll(replica, question_id, 2)
            if status == 200 and body["status"] != "pending":
                return str(body["status"])


def _asking(post: dict[str, object]) -> str | None:
    """Which question a Slack post shows, by its text."""
    text = str(post)
    return next((asked for asked in ("Escalate 0?", "Escalate 1?", "Post me?") if asked in text), None)
