"""Where a question goes in its chat, and what the channel keeps about the message: a forum topic per agent (like
Slack's thread per agent) is found again from the store after a restart, so an agent's questions stay together."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.ledger import Ledger

RECENT_QUESTIONS_SCANNED = 50


class TelegramRef(BaseModel):
    """What the Telegram channel keeps about a sent question: the message to edit, and where it was sent."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    chat_id: int
    message_id: int
    topic: int | None = None
    chat: str = ""
    """The chat as the route named it (`-100…`, `@name`), to find an agent's topic there again."""
    parts: list[int] = Field(default_factory=list[int])
    """Messages sent before the question with a detail too long for it."""

    @property
    def key(self) -> str:
        """The delivery key: the question message's chat and id, which every tap and reply on it carries."""
        return message_key(self.chat_id, self.message_id)


def message_key(chat_id: int, message_id: int) -> str:
    return f"{chat_id}:{message_id}"


class Topics:
    """Each agent's forum topic per chat: in memory once known, else read from the deliveries in the store."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._known: dict[tuple[str, str], int] = {}

    def find(self, ledger: Ledger, agent: str, chat: str) -> int | None:
        known = self._known.get((agent, chat))
        if known is not None:
            return known
        store = ledger.store
        for earlier in store.list_questions(agent_id=agent, channel=self.channel, limit=RECENT_QUESTIONS_SCANNED):
            delivery = store.get_delivery(earlier.id, self.channel)
            if delivery is None:
                continue
            ref = TelegramRef.model_validate(delivery.ref)
            if ref.chat == chat and ref.topic is not None:
                self._known[(agent, chat)] = ref.topic
                return ref.topic
        return None

    def opened(self, agent: str, chat: str, topic: int) -> None:
        self._known[(agent, chat)] = topic

    def forget(self) -> None:
        """Drop what is in memory (as after a restart)."""
        self._known.clear()
