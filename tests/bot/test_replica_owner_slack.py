"""Slack on two replicas sharing one PostgreSQL database: Slack retries a slowly acknowledged event, and the retry may
reach the other replica (behind a load balancer, or another Socket Mode connection); it is acted on once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest

from bot.channels.base import install_channel
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.replicas.feed import FeedTiming
from bot.replicas.for_store import change_feed
from bot.slack.channel import SlackChannel
from bot.slack.settings import SlackSettings
from bot.slack.transport import make_client
from bot.store.postgres.store import PostgresStore
from core import Agent, AgentRegistry, AskUserQuestionRequest, Context, UserQuestionService
from tests.background_ask import ask_in_background
from tests.fake_clock import FakeClock
from tests.slack.fake_slack import TOKEN, FakeSlack, fake_slack
from tests.slack.payloads import message_event
from tests.slack.records import item
from tests.slack.signing import SECRET, bolt_request, event_body

pytestmark = pytest.mark.anyio

RETRY = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
TS = "1700000000.000001"  # the question's message, the root of the thread replied in


@asynccontextmanager
async def slack_replica(url: str, fake: FakeSlack) -> AsyncIterator[tuple[SlackChannel, Ledger, Context]]:
    """One replica's Slack channel: its own bolt app, ledger, change feed and connection pool on the shared
    database."""
    async with AsyncExitStack() as stack:
        store = await PostgresStore.open(url)
        stack.push_async_callback(store.close)
        settings = SlackSettings.model_validate({"api_url": fake.url, "subscriptions": [{"channel": "#deploys"}]})
        channel = SlackChannel(settings, client=make_client(TOKEN, fake.url, backoff=0.01), signing_secret=SECRET)
        ledger = Ledger(store, FakeClock())
        ctx = Context()
        ctx.plugin(AgentRegistry)
        ctx.plugin(UserQuestionService)
        install_channel(ctx, channel, Router(["slack"], {"slack": settings.subscriptions}), ledger)
        # As under `serve`: whichever replica acts on the event, the other's waiting ask hears of the answer.
        tasks = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tasks.cancel_scope.cancel)
        await tasks.start(change_feed(store, ledger, FeedTiming(catch_up_every=0.2, overlap=1.0)).run)
        yield channel, ledger, ctx


async def test_a_retried_event_reaching_the_other_replica_is_acted_on_once(postgres_url: str) -> None:
    events: list[str] = []
    async with (
        fake_slack() as fake,
        slack_replica(postgres_url, fake) as (a, a_ledger, ctx),
        slack_replica(postgres_url, fake) as (b, _, _),
        anyio.create_task_group() as tasks,
    ):
        agent = Agent("deploy-7", name="deploy-bot")
        assert ctx.agents is not None
        ctx.agents.enter(agent)
        asked = ask_in_background(
            tasks, ctx, AskUserQuestionRequest(questions=[item(options=["Yes", "No"])], agent=agent)
        )
        await fake.wait_for("chat.postMessage")
        with anyio.fail_after(5):  # the reply is matched by the recorded delivery, written just after the post
            while await a_ledger.store.find_delivery("slack", f"C0DEPLOY:{TS}") is None:
                await anyio.sleep(0.01)
        reply = message_event("yes", thread_ts=TS, ts=fake.message_ts(), event_id="Ev0SLOWACK")
        first = await a.app.async_dispatch(bolt_request(event_body(reply)))
        retried = await b.app.async_dispatch(bolt_request(event_body(reply), headers=RETRY))
        answer = await asked.answer()
        question_id = (await a_ledger.store.list_questions(limit=1))[0].id
        events += [event.kind for event in await a_ledger.store.history(question_id=question_id)]
        tasks.cancel_scope.cancel()
        assert (first.status, retried.status) == (200, 200)
        assert answer.answers[0].selected == ["Yes"]
    assert (events.count("answered"), events.count("duplicate")) == (1, 0)
