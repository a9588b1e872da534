"""Webhooks through a running program and a real receiver that checks every signature: the body, the events wanted,
retries with the same delivery id, never again after a 2xx, and giving up (`bot.webhooks`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.program import Running, running
from bot.webhooks.sender import WebhookTiming
from bot.webhooks.signing import signature, verify_signature
from core import AskUserQuestionAnswerItem

from .fakes import RecordingChannel
from .program_rig import config_for
from .webhook_receiver import SECRET, Receiver, receiving

pytestmark = pytest.mark.anyio

FAST = WebhookTiming(poll_seconds=0.05, first_retry_seconds=0.1, attempt_seconds=2, lease_seconds=5)
ASK = {"questions": [{"id": "q1", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


@asynccontextmanager
async def serving(
    tmp_path: Path,
    receiver: Receiver,
    events: str = "",
    timing: WebhookTiming = FAST,
    results: list[str] | None = None,
) -> AsyncIterator[Running]:
    table = f'[[webhooks]]\nurl = "{receiver.url}"\nsecret_env = "HOOK_SECRET"\n{events}'
    config = config_for(tmp_path, table, environ={"HOOK_SECRET": SECRET})
    heard = results.append if results is not None else None
    async with running(
        config, channels=[RecordingChannel("web")], webhook_timing=timing, on_webhook_attempt=heard
    ) as started:
        yield started


async def ask(session: aiohttp.ClientSession, started: Running) -> str:
    async with session.post(f"{started.base_url}/v1/questions", json=ASK) as reply:
        assert reply.status == 202
        return str((await reply.json())["id"])


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)


async def test_an_answer_is_posted_signed_with_the_record_the_api_returns(tmp_path: Path) -> None:
    async with receiving() as receiver, serving(tmp_path, receiver) as started, aiohttp.ClientSession() as session:
        question_id = await ask(session, started)
        with anyio.fail_after(10):
            while not await started.installation.store.has_delivery(question_id, "web"):
                await anyio.sleep(0.02)
        item = AskUserQuestionAnswerItem(id="q1", selected=["Yes"])
        await started.installation.ledger.submit(question_id, {"q1": item}, by="alice", via="web")
        await receiver.wait_for(1)
        async with session.get(f"{started.base_url}/v1/questions/{question_id}") as reply:
            shown = await reply.json()
    [got] = receiver.got
    assert got.signed and got.content_type == "application/json"
    assert set(got.body) == {"id", "event", "question"}
    assert got.body == {"id": got.delivery, "event": "answered", "question": shown}
    assert got.body["question"]["answer"]["answers"][0]["selected"] == ["Yes"]
    assert got.timestamp.isdigit()
    assert not verify_signature("another secret", got.timestamp, got.raw, got.signature)


async def test_asked_is_sent_only_when_listed_and_each_event_once(tmp_path: Path) -> None:
    events = 'events = ["asked", "cancelled"]\n'
    async with (
        receiving() as receiver,
        serving(tmp_path, receiver, events) as started,
        aiohttp.ClientSession() as session,
    ):
        question_id = await ask(session, started)
        async with session.delete(f"{started.base_url}/v1/questions/{question_id}") as reply:
            assert reply.status == 200
        await receiver.wait_for(2)
        await anyio.sleep(0.3)  # several polls: nothing more comes
    assert sorted(got.body["event"] for got in receiver.got) == ["asked", "cancelled"]
    asked = next(got for got in receiver.got if got.body["event"] == "asked")
    assert asked.body["question"]["status"] == "pending"  # the question as it stood when it was asked
    assert len({got.delivery for got in receiver.got}) == 2
    assert all(got.signed for got in receiver.got)


async def test_the_default_events_leave_asked_out(tmp_path: Path) -> None:
    async with receiving() as receiver, serving(tmp_path, receiver) as started, aiohttp.ClientSession() as session:
        question_id = await ask(session, started)
        await anyio.sleep(0.3)
        assert receiver.got == []
        async with session.delete(f"{started.base_url}/v1/questions/{question_id}"):
            pass
        await receiver.wait_for(1)
    assert [got.body["event"] for got in receiver.got] == ["cancelled"]


async def test_failed_attempts_are_retried_with_the_same_id_and_body_until_a_2xx(tmp_path: Path) -> None:
    results: list[str] = []
    async with (
        receiving() as receiver,
        serving(tmp_path, receiver, results=results) as started,
        aiohttp.ClientSession() as session,
    ):
        receiver.statuses = [500, 404, 302]
        question_id = await ask(session, started)
        async with session.delete(f"{started.base_url}/v1/questions/{question_id}"):
            pass
        await receiver.wait_for(4)
        await anyio.sleep(0.5)  # backoff of 0.1, 0.2, 0.4 s: the next would have come by now
        async with session.get(f"{started.base_url}/metrics") as reply:
            scraped = await reply.text()
    assert len(receiver.got) == 4
    counted = {
        sample.labels["result"]: sample.value
        for family in text_string_to_metric_families(scraped)
        if family.name == "handraise_webhook_deliveries"
        for sample in family.samples
        if sample.name.endswith("_total")
    }
    assert counted == {"ok": 1, "retry": 3, "failed": 0}  # /metrics counts what the caller heard
    assert len({got.delivery for got in receiver.got}) == 1
    assert len({got.raw for got in receiver.got}) == 1
    assert all(got.signed for got in receiver.got)
    assert results == ["retry", "retry", "retry", "ok"]


async def test_a_receiver_that_cannot_be_reached_is_given_up_after_the_give_up_time(tmp_path: Path) -> None:
    results: list[str] = []
    timing = WebhookTiming(poll_seconds=0.05, first_retry_seconds=0.05, give_up_seconds=0.4, attempt_seconds=1)
    async with receiving() as receiver:
        url = receiver.url  # closed once the block ends: nothing listens there any more
    closed = Receiver(url=url)
    async with serving(tmp_path, closed, timing=timing) as started, aiohttp.ClientSession() as session:
        assert started.webhooks is not None
        started.webhooks.on_attempt = results.append
        question_id = await ask(session, started)
        async with session.delete(f"{started.base_url}/v1/questions/{question_id}"):
            pass
        with anyio.fail_after(10):
            while "failed" not in results:
                await anyio.sleep(0.02)
        await anyio.sleep(0.3)
    assert results[-1] == "failed" and set(results[:-1]) == {"retry"} and len(results) >= 2


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    body = json.dumps({"id": "x"}).encode()
    expected = hmac.new(SECRET.encode("utf-8"), b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature(SECRET, 1_700_000_000, body) == f"sha256={expected}"
    assert not verify_signature(SECRET, "17e8", body, f"sha256={expected}")
    assert not verify_signature(SECRET, "1700000000", body + b" ", f"sha256={expected}")


def test_the_backoff_starts_at_10_seconds_and_doubles_to_an_hour() -> None:
    timing = WebhookTiming()
    assert [timing.retry_in(n) for n in (1, 2, 3)] == [10, 20, 40]
    assert timing.retry_in(10_000) == 3600
    assert timing.first_retry_seconds + timing.poll_seconds <= 15
    assert timing.poll_seconds <= 10 and timing.lease_seconds + timing.poll_seconds <= 30
    assert timing.give_up_seconds >= 24 * 3600


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('url = "not a url"\nsecret_env = "S"', "webhooks[0].url"),
        ('url = "https://a b.example.org"\nsecret_env = "S"', "webhooks[0].url"),
        ('url = "javascript:alert(1)"\nsecret_env = "S"', "webhooks[0].url"),
        ('url = "https://a.example.org"\nsecret_env = "S"\nevents = ["paid"]', "webhooks[0].events[0]"),
        ('url = "https://a.example.org"\nsecret_env = "S"\nevents = []', "webhooks[0].events"),
        ('url = "https://a.example.org"\nsecret = "hunter2"', "webhooks[0].secret"),
        ('url = "https://a.example.org"\nsecret_env = "whsec_123 456"', "webhooks[0].secret_env"),
        ('url = "https://a.example.org"', "webhooks[0].secret_env"),
        (
            'url = "https://a.example.org"\nsecret_env = "S"\n'
            '[[webhooks]]\nurl = "https://a.example.org"\nsecret_env = "S"',
            "webhooks[1].url",
        ),
    ],
)
def test_a_bad_webhook_table_is_one_config_error_naming_the_key(table: str, key: str) -> None:
    from bot.config import parse_config
    from bot.settings.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        parse_config(f"[[webhooks]]\n{table}\n", environ={"S": "x"})
    assert refused.value.key == key and "\n" not in str(refused.value)


def test_the_events_default_to_the_three_resolutions() -> None:
    from bot.config import parse_config

    config = parse_config('[[webhooks]]\nurl = "https://a.example.org"\nsecret_env = "S"\n', environ={"S": "x"})
    assert config.webhooks[0].events == ["answered", "cancelled", "expired"]
