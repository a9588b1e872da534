"""With responders configured, the inbox asks who is answering, refuses anyone else, and records the name."""

from __future__ import annotations

import anyio
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.channels.base import install_channel
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.records import AgentRef
from bot.store.sqlite.async_store import SqliteStore
from bot.store.sqlite.store import Store
from bot.web import WebInbox
from bot.web.settings import WebSettings, WebSubscription
from core import Context
from tests.web.helpers import Client, answer, choice, make_context, plan, start_ask, web_question

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings() -> WebSettings:
    return WebSettings(
        responders=["alice@example.org", "@team.org"],
        subscriptions=[WebSubscription(agents=["deploy-*"], responders=["ops@example.org"]), WebSubscription()],
    )


async def test_the_form_asks_who_answers_and_the_audit_log_records_it(
    client: Client, ctx: Context, store: Store
) -> None:
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        [record] = store.list_questions(status="pending", channel="web")
        assert "Answering as" in await (await client.get("/")).text()
        nameless = await answer(client, record.id, [("q0", "0")])
        assert nameless.status == 400 and "Say who is answering" in await nameless.text()
        refused = await answer(client, record.id, [("q0", "0"), ("by", "mallory@evil.org")])
        assert refused.status == 403 and "may not answer" in await refused.text()
        accepted = await answer(client, record.id, [("q0", "0"), ("by", "bob@team.org")])
        assert accepted.status == 303
        await asking.result()
        kinds = {event.kind: event.actor for event in store.history(question_id=record.id)}
        assert kinds["refused"] == "mallory@evil.org" and kinds["answered"] == "bob@team.org"
        assert store.get_question(record.id).answered_by == "bob@team.org"  # type: ignore[union-attr]


async def test_once_the_route_is_gone_the_responders_kept_with_the_delivery_decide(
    client: Client, ctx: Context, inbox: WebInbox, store: Store
) -> None:
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())  # shown by this process, which holds it
        [record] = store.list_questions(status="pending", channel="web")
        inbox.replies.router = Router(["web"], {"web": [WebSubscription(agents=["someone-else"])]})
        refused = await answer(client, record.id, [("q0", "0"), ("by", "mallory@evil.org")])
        assert refused.status == 403
        assert (await answer(client, record.id, [("q0", "0"), ("by", "bob@team.org")])).status == 303
        await asking.result()


async def test_the_name_is_remembered_for_the_next_question(client: Client, store: Store) -> None:
    first = web_question(store, choice())
    assert (await answer(client, first.id, [("q0", "0"), ("by", "alice@example.org")])).status == 303
    web_question(store, choice())
    assert 'name="by" autocomplete="email" required value="alice@example.org"' in await (await client.get("/")).text()


async def test_a_subscription_with_its_own_responders_overrides_the_inbox_wide_list(
    client: Client, store: Store
) -> None:
    record = web_question(store, choice(), agent=AgentRef(id="deploy-7"))
    refused = await answer(client, record.id, [("q0", "0"), ("by", "alice@example.org")])
    assert refused.status == 403
    assert (await answer(client, record.id, [("q0", "0"), ("by", "OPS@example.org")])).status == 303


async def test_two_approvals_in_the_inbox_show_progress_then_answer(store: Store) -> None:
    ledger = Ledger(SqliteStore(store), SystemClock())
    inbox = WebInbox(ledger, WebSettings(subscriptions=[WebSubscription(responders=["@team.org"], approvals=2)]))
    ctx = make_context()
    install_channel(ctx, inbox, Router(["web"], {"web": inbox.settings.subscriptions}), ledger)
    app = web.Application()
    inbox.add_routes(app)
    async with TestClient(TestServer(app)) as client, anyio.create_task_group() as tasks:
        await client.get(f"/?token={inbox.token}")
        asking = await start_ask(tasks, ctx, plan())
        [record] = store.list_questions(status="pending", channel="web")
        first = await answer(client, record.id, [("q0", "0"), ("by", "ann@team.org")])
        assert first.status == 303
        page = await (await client.get(first.headers["Location"])).text()
        assert "Approval recorded for “Plan review”: 1 of 2 approvals: ann@team.org." in page
        assert "Approved so far by ann@team.org (1 approval)." in page
        await answer(client, record.id, [("q0", "0"), ("by", "bob@team.org")])
        assert (await asking.result()).answers[0].selected == ["Approve"]
        await inbox.close()
    assert store.get_question(record.id).answered_by == "ann@team.org, bob@team.org"  # type: ignore[union-attr]
