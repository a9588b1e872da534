"""The Telegram channel on a real seam, ledger and python-telegram-bot `Bot`, long-polling the fake Bot API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from bot.telegram.channel import TelegramChannel
from bot.telegram.settings import TelegramSettings, TelegramSubscription
from bot.telegram.transport import make_bot
from core import (
    Agent,
)
from tests.channel_rig import ChannelRig, Waits, install_on_a_seam

from .fake_telegram import TOKEN, FakeTelegram, fake_telegram, user

CHAT = -100123
WEBHOOK_URL = "https://bot.example.org/telegram/webhook"
ALICE = user(111, "Alice")
BOB = user(222, "Bob")
MALLORY = user(666, "Mallory")


@dataclass
class TelegramRig(ChannelRig):
    fake: FakeTelegram
    channel: TelegramChannel
    waits: Waits

    async def sent(self, count: int = 1) -> tuple[int, int]:
        """The (chat, message id) of the `count`-th message sent, once it has been."""
        args = (await self.fake.wait_for("sendMessage", count))[count - 1]
        chat = self.fake.chats.get(args["chat_id"]) or int(args["chat_id"])
        ids = [key for key in self.fake.messages if key[0] == chat]
        return ids[count - 1] if len(ids) >= count else ids[-1]

    def message(self, where: tuple[int, int]) -> dict[str, Any]:
        return self.fake.messages[where]


def subscription(**fields: Any) -> TelegramSubscription:
    return TelegramSubscription.model_validate({"chat": CHAT} | fields)


@asynccontextmanager
async def telegram_rig(
    tmp_path: Path,
    *subscriptions: TelegramSubscription,
    fake: FakeTelegram | None = None,
    webhook_secret: str | None = None,
    **settings: Any,
) -> AsyncIterator[TelegramRig]:
    """The channel installed on a fresh seam; it long-polls `fake` (a new one unless given: give the same one to
    two rigs in turn to restart the bot), or with `webhook_secret` runs in webhook mode."""
    async with AsyncExitStack() as stack:
        if fake is None:
            fake = await stack.enter_async_context(fake_telegram())
        started: list[TelegramRig] = []
        try:
            async with anyio.create_task_group() as tasks:
                started.append(_start(fake, tasks, tmp_path, list(subscriptions), webhook_secret, settings))
                if webhook_secret is None:
                    tasks.start_soon(started[0].channel.run)
                yield started[0]
                # Stopping is not the agents' cancelling: their questions stay pending for the next run.
                started[0].ledger.close()
                tasks.cancel_scope.cancel()
        finally:
            # After the task group: the base shows a cancelled question's outcome on the way out.
            for rig in started:
                await rig.channel.close()
                await rig.ledger.store.close()


def _start(
    fake: FakeTelegram,
    tasks: TaskGroup,
    tmp_path: Path,
    subscriptions: list[TelegramSubscription],
    webhook_secret: str | None,
    fields: dict[str, Any],
) -> TelegramRig:
    if webhook_secret is not None:
        fields = {"mode": "webhook", "webhook_url": WEBHOOK_URL, "webhook_secret_env": "SECRET"} | fields
    settings = TelegramSettings.model_validate(
        {"api_url": fake.url, "subscriptions": subscriptions or [subscription()]} | fields
    )
    waits = Waits()
    bot = make_bot(TOKEN, fake.url, poll_seconds=1)
    channel = TelegramChannel(settings, bot=bot, poll_seconds=1, sleep=waits, webhook_secret=webhook_secret)
    agent = Agent("deploy-7", name="deploy-bot")
    ledger, clock, ctx = install_on_a_seam(channel, "telegram", settings.subscriptions, tmp_path, agent)
    return TelegramRig(ledger, clock, ctx, agent, tasks, fake=fake, channel=channel, waits=waits)
