"""Replies typed in a question's thread (or straight into a DM) turned into answers.

A thread may hold several open questions; `targets` splits a reply among them. A reply only ever answers a question
posted before it, however late Slack delivers it, and a redelivered event is acted on once.
"""

from __future__ import annotations

from typing import Any

from bot.channels.base import Channel
from bot.channels.replies import Answer
from bot.slack.notices import Notices
from bot.slack.parse import ReplyError, parse_thread_reply, posted_after
from bot.slack.redeliveries import first_sight
from bot.slack.targets import targets
from bot.slack.threads import Threads
from bot.store.records import Delivery, QuestionRecord


class ThreadReplies:
    """`channel`'s bolt handler for message events (`on_message`)."""

    def __init__(self, channel: Channel, threads: Threads, notices: Notices) -> None:
        self.channel = channel
        self.threads = threads
        self.notices = notices

    async def on_message(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("subtype") not in (None, "thread_broadcast") or event.get("bot_id"):
            return
        channel, user, text = event.get("channel"), event.get("user"), event.get("text")
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not all(isinstance(value, str) for value in (channel, user, text, ts)):
            return
        assert isinstance(channel, str) and isinstance(user, str) and isinstance(text, str)
        ledger = self.channel.ledger
        in_thread = isinstance(thread_ts, str) and thread_ts != ts
        if not in_thread and event.get("channel_type") != "im":
            return  # a message in a channel, not in one of our threads
        # A reply can beat the recording of the question it answers (an automation replying at once).
        await self.channel.replies.recorded()
        if isinstance(thread_ts, str) and in_thread:
            open_here = await self.threads.open_in(ledger, channel, thread_ts)
        else:
            # In a DM people just reply, without opening the question's thread.
            open_here = await self.threads.open_in_conversation(ledger, channel)
        # A reply posted before a question was meant for an earlier one, however late Slack delivers it.
        open_here = [found for found in open_here if posted_after(ts, found[2].ts)]
        if not open_here:
            return  # people talking in a thread with nothing to answer
        event_id = body.get("event_id")
        if isinstance(event_id, str) and not await first_sight(self.channel, f"event:{event_id}"):
            return  # acted on already: Slack delivers again when the acknowledgement was slow
        reply_thread = thread_ts if isinstance(thread_ts, str) else None
        try:
            chosen = targets(
                text,
                [(ref, record.questions[0].header or record.questions[0].question) for record, _, ref in open_here],
            )
        except ReplyError as problem:
            await self.notices.tell(channel, user, str(problem), reply_thread)
            return
        for target in chosen:
            _, delivery, _ = open_here[target.index]

            def read(record: QuestionRecord, delivery: Delivery, part: str = target.text) -> Answer:
                return Answer(parse_thread_reply(part, record.questions))

            outcome = await self.channel.replies.answer(delivery.key, by=user, how="thread reply", read=read)
            await self.notices.show(outcome, channel, user, reply_thread)
