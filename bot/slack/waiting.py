"""`/handraise`: the questions waiting for the person who types it, with links to their messages, shown only to
them."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from bot.channels.base import Channel
from bot.slack import ids
from bot.slack.render import render_waiting
from bot.slack.targets import message_link
from bot.store.records import QuestionRecord

COMMAND = "/handraise"
"""The slash command that lists the questions waiting for the person who types it."""
WAITING_SCANNED = 200


class WaitingList:
    """`channel`'s bolt handler for the slash command (`on_command`), and the list it answers with."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    async def on_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        user = body.get("user_id")
        if not isinstance(user, str) or not user:
            await ack()
            return
        await ack(text=render_waiting(await self.waiting_for(user)), response_type="ephemeral")

    async def waiting_for(self, user: str) -> list[tuple[QuestionRecord, str]]:
        """The pending questions shown in Slack that `user` may answer, oldest first, with links to their messages."""
        replies = self.channel.replies
        store, waiting = self.channel.ledger.store, []
        pending = await store.list_questions(
            status="pending", channel=self.channel.name, limit=WAITING_SCANNED, newest_first=False
        )
        groups: dict[str, frozenset[str] | None] = {}  # Slack wants its answer within 3 s: each group read once
        for record in pending:
            delivery = await store.get_delivery(record.id, self.channel.name)
            if delivery is None:
                continue
            if await replies.may_answer(user, await replies.responders(record, delivery), groups):
                waiting.append((record, message_link(ids.SlackRef.model_validate(delivery.ref))))
        return waiting
