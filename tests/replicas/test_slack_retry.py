"""Slack retries an event whose acknowledgement was slow, and behind a load balancer the retry may reach another
replica: it is acted on once, because the replicas remember events in their shared database."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.slack.fake_slack import TOKEN, fake_slack
from tests.slack.payloads import message_event
from tests.slack.signing import SECRET

from .conftest import Query
from .harness import ReplicaSet, replica_set

pytestmark = pytest.mark.anyio

SLACK_DELIVERY = "SELECT key FROM deliveries WHERE question_id = %s AND channel = 'slack'"
RETRY = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
LATE = "1700000900.000001"
"""A reply ts later than every question here: only the event id can tell the retry from a new reply."""

SETTLE = 0.5
"""Slack's 200 comes before the event is acted on, and ignoring a retry shows nowhere; the sentinel waits this long
so that it comes after the retry. Were it too short, a retry wrongly acted on could go unnoticed, never the reverse."""


def config(slack_url: str) -> str:
    return f"""
[bot]
answerers = ["slack", "web"]

[slack]
mode = "http"
api_url = "{slack_url}"

[[slack.subscriptions]]
agents = ["deploy-*"]
channel = "#deploys"
thread = "agent"
"""


async def test_a_reply_retried_onto_another_replica_does_not_answer_the_next_question_in_the_thread(
    tmp_path: Path, postgres_url: str, database: Query
) -> None:
    async with fake_slack() as slack:
        env = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET}
        async with replica_set(tmp_path, postgres_url, 2, config=config(slack.url), env=env) as group:
            a, b = group.replicas
            first = await group.ask(a, "Deploy v1?", agent="deploy-7")
            _, thread = (await _slack_delivery(database, first)).split(":")
            reply = message_event("yes", thread_ts=thread, ts=LATE, event_id="Ev0SLOWACK")
            assert await group.slack_event(a, reply) == 200
            assert await _answer(group, first) == ["Yes"]
            second = await group.ask(a, "Deploy v2?", agent="deploy-7")
            posts = await slack.wait_for("chat.postMessage", 2)
            assert posts[1]["thread_ts"] == thread
            await _slack_delivery(database, second)
            assert await group.slack_event(b, reply, **RETRY) == 200
            await anyio.sleep(SETTLE)
            sentinel = message_event("no", thread_ts=thread, ts=slack.message_ts())
            assert await group.slack_event(b, sentinel) == 200
            assert await _answer(group, second) == ["No"]


async def _answer(group: ReplicaSet, question_id: str) -> list[str]:
    """The options chosen, once the question is answered (long-polling the replicas in turn)."""
    with anyio.fail_after(20):
        while True:
            for replica in group.replicas:
                status, body = await group.poll(replica, question_id, 1)
                if status == 200 and body["status"] == "answered":
                    return list(body["answer"]["answers"][0]["selected"])


async def _slack_delivery(database: Query, question_id: str) -> str:
    """The question's Slack delivery key (conversation:ts), once it is stored."""
    with anyio.fail_after(20):
        while not (found := await database(SLACK_DELIVERY, question_id)):
            await anyio.sleep(0.02)
    return str(found[0][0])
