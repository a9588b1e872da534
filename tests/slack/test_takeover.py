"""A question taken over after its sender died mid-delivery: its post is found by message metadata and not posted
again; when the history cannot be read, or holds only others' look-alikes, it is posted again with a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.slack.metadata import EVENT_TYPE, question_metadata
from bot.slack.render import render_question
from bot.slack.settings import SlackSubscription
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionRequest
from tests.background_ask import Asked, ask_in_background
from tests.bot.fakes import sync_store

from .payloads import message_event
from .records import item
from .rig import SlackRig, slack_rig, subscription

pytestmark = pytest.mark.anyio

CHANNEL = "C0DEPLOY"
YES_NO = item(options=["Yes (Recommended)", "No"])
NOT_RECORDED = "began but was not recorded; sending it again"


async def _begun_but_unrecorded(
    rig: SlackRig, *, post: bool = True, to: str = CHANNEL
) -> tuple[QuestionRecord, str | None]:
    """A question whose sender recorded the intent, (with `post`) had Slack post it, and died before recording the
    delivery; returns it and the ts of its post."""
    agent = AgentRef.from_agent(rig.agent)
    record = QuestionRecord(agent=agent, questions=[YES_NO], origin="api", created_at=rig.clock.now())
    store = rig.ledger.store
    await store.create_question(record)
    assert await store.fire_once(record.id, "deliver:slack")
    if not post:
        return record, None
    message = render_question(record, mentions=[])
    _, ts = await rig.channel.transport.post_message(to, message, metadata=question_metadata(record.id))
    return record, ts


def _take_over(rig: SlackRig, record: QuestionRecord) -> Asked:
    """Run the question as the replica that took it over does (bound to its stored record, not new)."""
    request = AskUserQuestionRequest(questions=record.questions, agent=rig.agent)
    rig.ledger.bind(request, record)
    return ask_in_background(rig.tasks, rig.ctx, request)


async def _delivered_key(rig: SlackRig, record: QuestionRecord) -> str:
    store = sync_store(rig.ledger.store)
    await rig.until(lambda: store.get_delivery(record.id, "slack") is not None)
    delivery = store.get_delivery(record.id, "slack")
    assert delivery is not None
    return delivery.key


async def test_a_question_posted_but_not_recorded_is_found_and_not_posted_again(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, ts = await _begun_but_unrecorded(rig)
        _take_over(rig, record)
        assert await _delivered_key(rig, record) == f"{CHANNEL}:{ts}"
        assert len(rig.fake.calls_to("chat.postMessage")) == 1
        (lookup,) = rig.fake.calls_to("conversations.history")
        assert lookup["channel"] == CHANNEL and lookup["include_all_metadata"] in ("1", "true")


async def test_a_thread_reply_answers_the_question_found_after_a_takeover(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, ts = await _begun_but_unrecorded(rig)
        asked = _take_over(rig, record)
        await _delivered_key(rig, record)
        assert ts is not None
        assert (await rig.event(message_event("2", thread_ts=ts, ts=rig.fake.message_ts()))).status == 200
        assert (await asked.answer()).to_wire()["answers"] == [{"id": "q1", "selected": ["No"]}]


async def test_the_lookup_reads_history_from_shortly_before_the_question_was_asked(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, _ = await _begun_but_unrecorded(rig)
        _take_over(rig, record)
        await _delivered_key(rig, record)
        (lookup,) = rig.fake.calls_to("conversations.history")
        created = record.created_at.timestamp()
        assert created - 600 <= float(lookup["oldest"]) < created


async def test_without_history_scopes_the_question_is_posted_again_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, ts = await _begun_but_unrecorded(rig)
        rig.fake.fail("conversations.history", "missing_scope")
        _take_over(rig, record)
        key = await _delivered_key(rig, record)
        assert key != f"{CHANNEL}:{ts}" and len(rig.fake.calls_to("chat.postMessage")) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("missing_scope" in text and record.id in text for text in warnings), warnings
    assert any(NOT_RECORDED in text for text in warnings), warnings


async def test_a_question_never_posted_is_posted_after_the_lookup(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, _ = await _begun_but_unrecorded(rig, post=False)
        _take_over(rig, record)
        await _delivered_key(rig, record)
        assert len(rig.fake.calls_to("conversations.history")) == 1
        assert len(rig.fake.calls_to("chat.postMessage")) == 1


async def test_a_dm_question_posted_but_not_recorded_is_found_in_the_dm(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, SlackSubscription.model_validate({"user": "U0ALICE"})) as rig:
        dm = await rig.channel.transport.open_dm("U0ALICE")
        record, ts = await _begun_but_unrecorded(rig, to=dm)
        _take_over(rig, record)
        assert await _delivered_key(rig, record) == f"{dm}:{ts}"
        assert len(rig.fake.calls_to("chat.postMessage")) == 1


async def test_a_channel_named_by_name_cannot_be_looked_up_and_is_posted_again_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with slack_rig(tmp_path, subscription(channel="#deploys")) as rig:
        record, _ = await _begun_but_unrecorded(rig)
        _take_over(rig, record)
        await _delivered_key(rig, record)
        assert len(rig.fake.calls_to("chat.postMessage")) == 2
    assert f"cannot look for question {record.id}'s earlier post at #deploys" in caplog.text


HOSTILE: list[dict[str, Any]] = [
    {"bot_id": "B0OTHER"},  # another app naming our question exactly
    {"metadata": "handraise_question"},
    {"metadata": {"event_type": "other_app", "event_payload": {"question_id": "{id}"}}},
    {"metadata": {"event_type": EVENT_TYPE, "event_payload": ["{id}"]}},
    {"metadata": {"event_type": EVENT_TYPE, "event_payload": {"question_id": 7}}},
    {"metadata": {"event_type": EVENT_TYPE, "event_payload": {"question_id": "{id}" + "x" * 100_000}}},
    {"ts": 1700000000.5},
    {"ts": "9" * 100},
]


@pytest.mark.parametrize("change", HOSTILE)
async def test_look_alike_posts_in_history_are_ignored(tmp_path: Path, change: dict[str, Any]) -> None:
    async with slack_rig(tmp_path, subscription(channel=CHANNEL)) as rig:
        record, _ = await _begun_but_unrecorded(rig, post=False)
        message: dict[str, Any] = {"type": "message", "ts": "1700000099.000001", "bot_id": "B0BOT", "text": "?"}
        message |= {"metadata": question_metadata(record.id)} | _fill(change, record.id)
        rig.fake.add_message(CHANNEL, message)
        rig.fake.add_message(CHANNEL, {"type": "message", "ts": "x", "metadata": None})
        _take_over(rig, record)
        assert await _delivered_key(rig, record) != f"{CHANNEL}:1700000099.000001"
        assert len(rig.fake.calls_to("chat.postMessage")) == 1


def _fill(value: Any, question_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{id}", question_id)
    if isinstance(value, dict):
        return {key: _fill(item, question_id) for key, item in value.items()}  # pyright: ignore
    if isinstance(value, list):
        return [_fill(item, question_id) for item in value]  # pyright: ignore
    return value


async def test_every_question_is_posted_with_metadata_naming_it(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        post = await rig.posted()
        assert post["metadata"] == {"event_type": EVENT_TYPE, "event_payload": {"question_id": rig.question_id()}}
