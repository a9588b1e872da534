"""Where a question goes in its chat, and what the channel keeps about the message: a forum topic per agent (like
Slack's thread per agent) is found again from the store after a restart, so an agent's questions stay together."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.channels.agent_places import AgentPlaces


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


def topics(channel: str) -> AgentPlaces[int]:
    """Each agent's forum topic per chat (as the route names it)."""
    return AgentPlaces(channel, _topic_in)


def _topic_in(ref: dict[str, Any], chat: str) -> int | None:
    telegram = TelegramRef.model_validate(ref)
    return telegram.topic if telegram.chat == chat else None
