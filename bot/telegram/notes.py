"""A status note in Telegram: a message in the route's chat (in the agent's forum topic with `topic = "agent"`,
opening it if the agent has none yet, as its first question would), sent as a reply to the agent's last question
there so that the chat shows which work it is about."""

from __future__ import annotations

from bot.channels.agent_places import AgentPlaces
from bot.channels.base import Channel
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.telegram.render import escape_clipped
from bot.telegram.settings import TelegramSubscription
from bot.telegram.topics import TelegramRef
from bot.telegram.transport import TelegramTransport

HEADLINE_SHOWN = 300
DETAIL_SHOWN = 1_000
"""Characters of the agent's words under the headline: a glance at where it stands, not its whole answer."""
WORD_JOINER = "\u2060"


def render_note(note: StatusNote) -> str:
    """The note as Telegram HTML. The agent's text is escaped as a question's is, and an `@` is kept from starting a
    mention (Telegram links and notifies `@username` in any text), so a note can ping nobody. Pure."""
    text = escape_clipped(note.headline, HEADLINE_SHOWN)
    if note.detail is not None:
        text += "\n" + escape_clipped(note.detail, DETAIL_SHOWN)
    return text.replace("@", "@" + WORD_JOINER)


class NotePoster:
    """Sends `channel`'s status notes."""

    def __init__(self, channel: Channel, transport: TelegramTransport, topics: AgentPlaces[int]) -> None:
        self.channel = channel
        self.transport = transport
        self.topics = topics

    async def post(self, note: StatusNote, route: Route) -> bool:
        """Send `note` where the route's subscription says; False without one. Raises TelegramCallError."""
        subscription = route.subscription
        if not isinstance(subscription, TelegramSubscription):
            return False
        chat, agent = str(subscription.chat), note.agent.id
        topic = subscription.topic if isinstance(subscription.topic, int) else None
        if subscription.topic == "agent":
            async with self.topics.lock(agent, chat):
                topic = await self.topics.find(self.channel.ledger, agent, chat)
                if topic is None:
                    topic = await self.transport.create_topic(subscription.chat, note.agent.name or agent)
                    self.topics.remember(agent, chat, topic)
        last = await self._last_question(agent, chat)
        reply_to = last.message_id if last is not None and last.topic == topic else None
        await self.transport.send(subscription.chat, render_note(note), topic=topic, reply_to=reply_to)
        return True

    async def _last_question(self, agent: str, chat: str) -> TelegramRef | None:
        """The message of the agent's latest question sent in `chat`, if its latest question went there."""
        store, name = self.channel.ledger.store, self.channel.name
        for record in await store.list_questions(agent_id=agent, channel=name, limit=1):
            delivery = await store.get_delivery(record.id, name)
            ref = TelegramRef.model_validate(delivery.ref) if delivery is not None else None
            if ref is not None and ref.chat == chat:
                return ref
        return None
