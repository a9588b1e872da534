"""Live updates: open pages hear of new, partly answered and resolved questions, and catch up after a reconnect.

Events carry ids and the number waiting; the page fetches a card's HTML from `/questions/{id}/card`.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from aiohttp import ClientResponse

from bot.api.remote import RemoteQuestions
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.questions.tasks import TaskBag
from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from bot.web import WebInbox
from bot.web.live import BACKLOG, STREAM_BUFFER, LiveFeed
from bot.web.settings import WebSettings
from core import AskUserQuestionAnswerItem, Context
from tests.web.helpers import TOKEN, Client, answer, choice, item, start_ask, web_question

pytestmark = pytest.mark.anyio


async def next_event(stream: ClientResponse) -> dict[str, Any]:
    """The next event's JSON payload (with its id under "_id"), skipping retry hints and keep-alive comments."""
    event_id = ""
    with anyio.fail_after(5):
        while True:
            line = (await stream.content.readline()).decode()
            assert line, "the event stream ended"
            if line.startswith("id: "):
                event_id = line[4:].strip()
            elif line.startswith("data: "):
                return json.loads(line[6:]) | {"_id": event_id}


async def card(client: Client, question_id: str) -> str:
    response = await client.get(f"/questions/{question_id}/card")
    assert response.status == 200 and response.content_type == "text/html"
    return await response.text()


async def test_a_new_question_appears_and_its_answer_follows(client: Client, ctx: Context, store: Store) -> None:
    stream = await client.get("/events")
    assert stream.status == 200 and stream.content_type == "text/event-stream"
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        asked = await next_event(stream)
        assert {key: asked[key] for key in ("kind", "waiting")} == {"kind": "asked", "waiting": 1}
        shown = await card(client, asked["id"])
        assert "Which environment?" in shown and 'name="csrf"' in shown and 'data-status="pending"' in shown
        assert (await answer(client, asked["id"], [("q0", "0")])).status == 303
        resolved = await next_event(stream)
        assert (resolved["kind"], resolved["status"], resolved["waiting"]) == ("resolved", "answered", 0)
        assert "<strong>staging</strong>" in await card(client, asked["id"])
        await asking.result()
    stream.close()


async def test_a_cancelled_question_is_pushed_as_cancelled(client: Client, ctx: Context) -> None:
    stream = await client.get("/events")
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        asked = await next_event(stream)
        asking.controller.abort("moved on")
        resolved = await next_event(stream)
        assert resolved["status"] == "cancelled" and "Cancelled" in await card(client, asked["id"])
    stream.close()


async def test_partial_answers_from_elsewhere_are_pushed(client: Client, store: Store, ledger: Ledger) -> None:
    record = web_question(store, choice(), item("why"))
    stream = await client.get("/events")
    await ledger.save_partial(
        record.id, AskUserQuestionAnswerItem(id="why", custom="it is Friday"), by="ann", via="slack"
    )
    partial = await next_event(stream)
    assert partial["kind"] == "partial" and "it is Friday" in await card(client, partial["id"])
    stream.close()


async def test_events_stay_small_however_large_the_question(client: Client, ctx: Context, inbox: WebInbox) -> None:
    huge = item("plan", question="Ship it?", detail="x" * 1_000_000)
    stream = await client.get("/events")
    asked: dict[str, Any] = {}
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, huge)
        asked = await next_event(stream)
        asking.controller.abort("moved on")
        await next_event(stream)
    stream.close()
    kept = inbox.shown.feed.backlog  # what a reconnecting page replays
    assert len(kept) == 2 and all(len(event.data) < 200 for event in kept)
    assert "x" * 1000 in await card(client, asked["id"])


async def test_the_first_api_question_is_counted_once_though_its_delivery_was_stored_with_it(
    anonymous: Client, ctx: Context, ledger: Ledger, settings: WebSettings
) -> None:
    """A page reconnecting to a restarted inbox (no page rendered yet): the first count comes from the store."""
    tasks = TaskBag()
    remote = RemoteQuestions(ctx, ledger, Router(["web"], {"web": settings.subscriptions}), tasks)
    stream = await anonymous.get("/events", headers={"Authorization": f"Bearer {TOKEN}"})
    assert stream.status == 200
    record = await remote.ask([choice()], None)
    asked = await next_event(stream)
    assert (asked["id"], asked["waiting"]) == (record.id, 1)
    stream.close()
    await remote.cancel(record.id)
    await tasks.close()


async def test_a_question_shown_again_while_it_waits_is_counted_once(
    anonymous: Client, inbox: WebInbox, store: Store
) -> None:
    record = web_question(store, choice())
    stream = await anonymous.get("/events", headers={"Authorization": f"Bearer {TOKEN}"})
    await inbox.shown.show(record)
    assert (await next_event(stream))["waiting"] == 1
    await inbox.shown.show(record)  # again, as a showing tried again after a failure does
    assert inbox.shown.waiting == 1 and len(inbox.shown.feed.backlog) == 1
    stream.close()


async def test_events_count_every_waiting_question_not_only_those_on_the_page(
    client: Client, ctx: Context, store: Store
) -> None:
    for _ in range(150):
        web_question(store, choice())
    await client.get("/")  # the inbox counts from the store
    stream = await client.get("/events")
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        assert (await next_event(stream))["waiting"] == 151
        asking.controller.abort("moved on")
        assert (await next_event(stream))["waiting"] == 150
    stream.close()


async def test_a_card_is_only_for_the_signed_in_and_only_of_this_inbox(
    anonymous: Client, store: Store, ledger: Ledger
) -> None:
    shown = web_question(store, choice())
    elsewhere = QuestionRecord(questions=[choice()])
    store.create_question(elsewhere)
    store.add_delivery(elsewhere.id, "slack", "C1:1.2", {})
    assert (await anonymous.get(f"/questions/{shown.id}/card")).status == 401
    await anonymous.get(f"/?token={TOKEN}")
    assert (await anonymous.get(f"/questions/{shown.id}/card")).status == 200
    assert (await anonymous.get(f"/questions/{elsewhere.id}/card")).status == 404
    assert (await anonymous.get("/questions/q_nope/card")).status == 404


async def test_questions_of_other_channels_are_not_pushed(client: Client, store: Store, ledger: Ledger) -> None:
    stream = await client.get("/events")
    slack_only = QuestionRecord(questions=[choice()])
    store.create_question(slack_only)
    store.add_delivery(slack_only.id, "slack", "C1:1", {})
    await ledger.resolve(slack_only.id, "cancelled", code="ASK_CANCELLED", message="gone")
    shown = web_question(store, choice())
    await ledger.resolve(shown.id, "cancelled", code="ASK_CANCELLED", message="gone")
    assert (await next_event(stream))["id"] == shown.id
    stream.close()


async def test_a_reconnecting_page_gets_what_it_missed(client: Client, store: Store, ledger: Ledger) -> None:
    first, second = web_question(store, choice()), web_question(store, choice())
    stream = await client.get("/events")
    await ledger.resolve(first.id, "expired", code="ASK_TIMEOUT", message="late")
    seen = await next_event(stream)
    stream.close()
    await ledger.resolve(second.id, "expired", code="ASK_TIMEOUT", message="late")
    again = await client.get("/events", headers={"Last-Event-ID": seen["_id"]})
    assert (await next_event(again))["id"] == second.id
    again.close()
    stale = await client.get("/events", headers={"Last-Event-ID": "otherrun-3"})
    assert (await next_event(stale))["kind"] == "reload"
    stale.close()


async def test_close_ends_open_streams_so_the_server_can_stop(client: Client, inbox: WebInbox) -> None:
    stream = await client.get("/events")
    await inbox.close()
    with anyio.fail_after(5):
        assert await stream.content.read() == b"retry: 2000\n\n"


def test_the_backlog_replays_only_what_it_still_holds() -> None:
    feed = LiveFeed()
    for number in range(BACKLOG + 5):
        feed.publish({"n": number})
    with feed.subscribe(None) as (missed, _):
        assert missed == []
    last_id = f"{feed.epoch}-{BACKLOG + 3}"
    with feed.subscribe(last_id) as (missed, _):
        assert [json.loads(event.data)["n"] for event in missed] == [BACKLOG + 3, BACKLOG + 4]
    with feed.subscribe(f"{feed.epoch}-2") as (missed, _):
        assert [json.loads(event.data) for event in missed] == [{"kind": "reload"}]


async def test_a_page_that_stops_reading_is_cut_off_instead_of_holding_memory() -> None:
    feed = LiveFeed()
    with feed.subscribe(None) as (_, stream):
        for number in range(STREAM_BUFFER + 1):
            feed.publish({"n": number})
        assert feed.subscribers == 0
        received = [event async for event in stream]
    assert len(received) == STREAM_BUFFER
