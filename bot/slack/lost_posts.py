"""Finding a question's post that an earlier `deliver` made but never recorded (its replica died in between), so
that the replica taking the question over does not post it twice."""

from __future__ import annotations

import logging

from bot.channels.base import Channel, Sent
from bot.questions.routing import Route
from bot.slack import ids
from bot.slack.metadata import posted_question
from bot.slack.posting import conversation
from bot.slack.settings import SlackSubscription
from bot.slack.threads import Threads
from bot.slack.transport import SlackCallError, SlackTransport
from bot.store.records import QuestionRecord

log = logging.getLogger(__name__)

LOOKUP_MARGIN_SECONDS = 300
"""How far before a question's creation its lost post is looked for (clocks differ between replicas and Slack)."""


class LostPosts:
    """Looks for `channel`'s unrecorded posts by their metadata in the conversation's history."""

    def __init__(self, channel: Channel, transport: SlackTransport, threads: Threads) -> None:
        self.channel = channel
        self.transport = transport
        self.threads = threads

    async def find(self, question: QuestionRecord, route: Route) -> Sent | None:
        """The question's message when an earlier `deliver` posted it, found by its metadata in the conversation's
        history since shortly before the question was asked. None (so it is posted again, with one warning) when
        the app may not read the history (channels:history, groups:history, im:history) or Slack fails."""
        subscription = route.subscription
        if not isinstance(subscription, SlackSubscription):
            return None
        async with self.threads.place(self.channel.ledger, question, subscription) as place:
            try:
                target, thread_ts = await conversation(self.transport, subscription, place)
                if target.startswith("#"):
                    raise SlackCallError("conversations.history", "channel_named", "give the channel's id (C…)")
                oldest = question.created_at.timestamp() - LOOKUP_MARGIN_SECONDS
                messages = await self.transport.history(target, oldest=oldest, thread_ts=thread_ts)
                ts = posted_question(messages, question.id, await self.transport.bot_id())
            except SlackCallError as failure:
                log.warning(
                    "slack: cannot look for question %s's earlier post at %s: %s",
                    question.id,
                    place.destination,
                    failure,
                )
                return None
            if ts is None:
                return None
            ref = ids.SlackRef(channel=target, ts=ts, thread_ts=thread_ts, destination=place.destination)
            self.threads.posted(question.id, place.agent, ref)
        return Sent(key=ref.key, ref=ref)
