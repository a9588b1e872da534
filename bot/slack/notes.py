"""A status note in Slack: posted in the agent's thread where its questions go, or, when the agent has none there
yet, where its first question would go, which makes that message the agent's thread (`Threads.agents`)."""

from __future__ import annotations

from bot.channels.base import Channel
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.slack.blocks import escape_clipped, section
from bot.slack.posting import conversation
from bot.slack.render import SlackMessage
from bot.slack.settings import SlackSubscription
from bot.slack.threads import Place, Threads
from bot.slack.transport import SlackTransport

HEADLINE_SHOWN = 300
DETAIL_SHOWN = 1_000
"""Characters of the agent's words under the headline: a glance at where it stands, not its whole answer."""


def render_note(note: StatusNote) -> SlackMessage:
    """The note as mrkdwn, the agent's text escaped so that it can mention nobody. Pure."""
    text = escape_clipped(note.headline, HEADLINE_SHOWN)
    if note.detail is not None:
        text += "\n" + escape_clipped(note.detail, DETAIL_SHOWN)
    return SlackMessage(text, [section(text)])


class NotePoster:
    """Posts `channel`'s status notes, under the same per-agent lock as its questions, so that a note and a question
    arriving together still share one thread."""

    def __init__(self, channel: Channel, transport: SlackTransport, threads: Threads) -> None:
        self.channel = channel
        self.transport = transport
        self.threads = threads

    async def post(self, note: StatusNote, route: Route) -> bool:
        """Post `note` where the route's subscription says; False without one. Raises SlackCallError."""
        subscription = route.subscription
        if not isinstance(subscription, SlackSubscription):
            return False
        destination = subscription.channel or subscription.user or ""
        # With `thread = "request"` each question has a thread of its own: the note goes beside them.
        agent = note.agent.id if subscription.thread == "agent" else None
        places = self.threads.agents
        async with places.lock(agent, destination):
            root = await places.find(self.channel.ledger, agent, destination) if agent is not None else None
            target, thread_ts = await conversation(self.transport, subscription, Place(destination, agent, root))
            posted, ts = await self.transport.post_message(target, render_note(note), thread_ts=thread_ts)
            if agent is not None and root is None:
                places.remember(agent, destination, (posted, ts))
        return True
