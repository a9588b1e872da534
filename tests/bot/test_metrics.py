"""`GET /metrics` through the real program: prometheus_client's own parser reads what real asks, answers, cancels,
expiries and failed deliveries left there; the API token guards it as it guards /v1."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics.families import Metrics
from bot.program import running
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswerItem
from tests.fake_clock import FakeClock

from .fakes import RecordingChannel
from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
FAMILIES = {
    "handraise_questions_asked": "counter",
    "handraise_questions_resolved": "counter",
    "handraise_questions_pending": "gauge",
    "handraise_agents_waiting": "gauge",
    "handraise_answer_seconds": "histogram",
    "handraise_store_commit_seconds": "histogram",
    "handraise_channel_send_errors": "counter",
    "handraise_webhook_deliveries": "counter",
}


async def scrape(base_url: str, **headers: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(f"{base_url}/metrics", headers=headers) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


def families(text: str) -> dict[str, Metric]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(family: Metric, sample: str, **labels: str) -> float:
    found = [s.value for s in family.samples if s.name == sample and s.labels == labels]
    assert len(found) == 1, f"{sample}{labels} in {family.samples}"
    return found[0]


async def ask(base_url: str) -> str:
    async with aiohttp.ClientSession() as session, session.post(f"{base_url}/v1/questions", json=ASK) as response:
        assert response.status == 202
        return str((await response.json())["id"])


async def answer(running: Any, question_id: str) -> None:
    item = AskUserQuestionAnswerItem(id="go", selected=["Yes"])
    assert (await running.installation.ledger.submit(question_id, {"go": item}, by="alice", via="web")).won


async def test_every_family_is_declared_before_it_has_a_sample(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        status, content_type, text = await scrape(running.base_url)
    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    found = families(text)
    assert {name: found[name].type for name in FAMILIES} == FAMILIES
    assert value(found["handraise_questions_asked"], "handraise_questions_asked_total") == 0
    assert value(found["handraise_questions_pending"], "handraise_questions_pending") == 0
    for result in ("ok", "retry", "failed"):
        assert value(found["handraise_webhook_deliveries"], "handraise_webhook_deliveries_total", result=result) == 0


async def test_asks_answers_cancels_and_expiries_are_counted_once_each(tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(UTC))  # the store stamps an end with the wall clock
    extra = '[[web.subscriptions]]\nexpire_after = "1h"\n'
    async with program(config_for(tmp_path, extra), clock=clock) as (running, channels):
        answered, cancelled, expired = [await ask(running.base_url) for _ in range(3)]
        await channels["web"].delivery_seen.wait()
        await answer(running, answered)
        async with aiohttp.ClientSession() as session:
            async with session.delete(f"{running.base_url}/v1/questions/{cancelled}") as response:
                assert response.status == 200
            await clock.advance(timedelta(hours=1))
            async with session.get(f"{running.base_url}/v1/questions/{expired}?wait=5") as response:
                assert (await response.json())["status"] == "expired"
            waiting = await ask(running.base_url)
            async with session.get(f"{running.base_url}/healthz") as response:
                healthz = await response.json()
        _, _, text = await scrape(running.base_url)
    found = families(text)
    assert value(found["handraise_questions_asked"], "handraise_questions_asked_total") == 4
    resolved = found["handraise_questions_resolved"]
    assert value(resolved, "handraise_questions_resolved_total", outcome="answered", channel="web") == 1
    assert value(resolved, "handraise_questions_resolved_total", outcome="cancelled", channel="api") == 1
    assert value(resolved, "handraise_questions_resolved_total", outcome="expired", channel="web") == 1
    # The one left waiting is pending in the store, and /healthz says the same.
    assert value(found["handraise_questions_pending"], "handraise_questions_pending") == healthz["pending"] == 1
    assert waiting not in text
    answers = found["handraise_answer_seconds"]
    assert value(answers, "handraise_answer_seconds_count") == 1
    assert 0 <= value(answers, "handraise_answer_seconds_sum") < 60
    assert value(answers, "handraise_answer_seconds_bucket", le="60.0") == 1
    commits = found["handraise_store_commit_seconds"]
    assert value(commits, "handraise_store_commit_seconds_count", write="ask") == 4
    assert value(commits, "handraise_store_commit_seconds_count", write="resolve") == 3


async def test_a_channel_that_cannot_deliver_is_counted_by_name(tmp_path: Path) -> None:
    failing = RecordingChannel("web", fail_with="the inbox is on fire")
    async with running(config_for(tmp_path), channels=[failing]) as started:
        question_id = await ask(started.base_url)
        url = f"{started.base_url}/v1/questions/{question_id}?wait=5"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert (await response.json())["status"] == "failed"
        _, _, text = await scrape(started.base_url)
    found = families(text)
    assert value(found["handraise_channel_send_errors"], "handraise_channel_send_errors_total", channel="web") == 1
    resolved = found["handraise_questions_resolved"]
    assert value(resolved, "handraise_questions_resolved_total", outcome="failed", channel="web") == 1


async def test_metrics_need_the_token_wherever_the_api_does(tmp_path: Path) -> None:
    config = config_for(tmp_path, environ={"HR_TOKEN": "s3cret"})
    server = config.server.model_copy(update={"listen": "0.0.0.0:0", "api_token_env": "HR_TOKEN"})
    config = config.model_copy(update={"server": server})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HR_TOKEN", "s3cret")
        async with program(config) as (started, _):
            # Beyond loopback the token is asked of every client, this machine's included.
            local = started.base_url.replace("0.0.0.0", "127.0.0.1")
            assert (await scrape(local))[0] == 401
            assert (await scrape(local, Authorization="Bearer wrong"))[0] == 401
            status, _, text = await scrape(local, Authorization="Bearer s3cret")
    assert status == 200 and "handraise_questions_pending" in text


async def test_labels_stay_bounded_whatever_a_record_says(tmp_path: Path) -> None:
    metrics = Metrics(["slack", "web"])
    record = QuestionRecord(questions=[], status="answered", answered_via="q_forged-per-question-value")
    metrics.resolved(record, 0.001)
    metrics.send_failed("another-invented-name")
    with pytest.raises(ValueError, match="not one of ok, retry, failed"):
        metrics.webhook_delivery("maybe")  # type: ignore[arg-type]
    found = families(metrics.exposition(pending=0, waiting=0).decode())
    resolved = found["handraise_questions_resolved"]
    assert value(resolved, "handraise_questions_resolved_total", outcome="answered", channel="other") == 1
    errors = found["handraise_channel_send_errors"]
    assert value(errors, "handraise_channel_send_errors_total", channel="other") == 1
    assert "forged" not in metrics.exposition(pending=0, waiting=0).decode()


def test_two_programs_count_apart() -> None:
    first, second = Metrics(["web"]), Metrics(["web"])
    first.webhook_delivery("ok")
    assert (
        value(
            families(first.exposition(pending=0, waiting=0).decode())["handraise_webhook_deliveries"],
            "handraise_webhook_deliveries_total",
            result="ok",
        )
        == 1
    )
    assert (
        value(
            families(second.exposition(pending=0, waiting=0).decode())["handraise_webhook_deliveries"],
            "handraise_webhook_deliveries_total",
            result="ok",
        )
        == 0
    )
