"""The Slack channel on a real seam, ledger and bolt app, talking to the fake Slack API; requests signed for real."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from aiohttp import web
from slack_bolt.response import BoltResponse

from bot.slack.channel import SlackChannel
from bot.slack.settings import SlackSettings, SlackSubscription
from bot.slack.threads import Threads
from bot.slack.transport import make_client
from core import Agent
from tests.channel_rig import ChannelRig, install_on_a_seam

from ..bot.fakes import sync_store
from .fake_slack import TOKEN, FakeSlack, fake_slack
from .signing import SECRET, bolt_request, event_body, interactive_body


@dataclass
class SlackRig(ChannelRig):
    fake: FakeSlack
    channel: SlackChannel

    async def posted(self, count: int = 1) -> dict[str, Any]:
        """The `count`-th chat.postMessage, once it has happened."""
        return (await self.fake.wait_for("chat.postMessage", count))[count - 1]

    async def click(self, payload: dict[str, Any], **signing: Any) -> BoltResponse:
        return await self.channel.app.async_dispatch(bolt_request(interactive_body(payload), **signing))

    async def event(self, payload: dict[str, Any], **signing: Any) -> BoltResponse:
        return await self.channel.app.async_dispatch(bolt_request(event_body(payload), **signing))

    async def restart_memory(self) -> None:
        """Give the channel a fresh memory of threads, as a new process has: the next post and reply read the store.
        Waits first for every question asked so far to have its Slack delivery recorded, as before a restart."""
        store = sync_store(self.ledger.store)
        await self.until(lambda: all(store.get_delivery(q.id, "slack") for q in store.list_questions(limit=1000)))
        # The channel's parts share one Threads object: it gets a new process's empty memory in place.
        vars(self.channel.threads).update(vars(Threads(self.channel.name)))


def subscription(**fields: Any) -> SlackSubscription:
    return SlackSubscription.model_validate({"channel": "#deploys"} | fields)


APP_TOKEN = "xapp-1-test-app-token"


@asynccontextmanager
async def slack_rig(
    tmp_path: Path, *subscriptions: SlackSubscription, mode: str = "http", fake: FakeSlack | None = None
) -> AsyncIterator[SlackRig]:
    """The channel on a fresh bolt app and a store on `tmp_path`'s file. Pass the `fake` of an earlier rig to restart
    against the same Slack: a new app, ledger and store connection, the same file."""
    async with nullcontext(fake) if fake is not None else fake_slack() as fake:
        settings = SlackSettings.model_validate(
            {"mode": mode, "api_url": fake.url, "subscriptions": list(subscriptions) or [subscription()]}
            | ({"app_token_env": "SLACK_APP_TOKEN", "signing_secret_env": None} if mode == "socket" else {})
        )
        client = make_client(TOKEN, fake.url, backoff=0.01)
        channel = SlackChannel(settings, client=client, signing_secret=SECRET, app_token=APP_TOKEN)
        agent = Agent("deploy-7", name="deploy-bot")
        ledger, clock, ctx = install_on_a_seam(channel, "slack", settings.subscriptions, tmp_path, agent)
        with sync_store(ledger.store):
            async with anyio.create_task_group() as tasks:
                yield SlackRig(ledger, clock, ctx, agent, tasks, fake=fake, channel=channel)
                tasks.cancel_scope.cancel()


@asynccontextmanager
async def served(channel: SlackChannel) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """The channel's /slack/events on a real HTTP server on loopback; yields its URL and a client session."""
    app = web.Application()
    channel.add_routes(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    try:
        async with aiohttp.ClientSession() as session:
            yield url, session
    finally:
        await runner.cleanup()
