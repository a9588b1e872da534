"""The `[telegram]` table: the bot (long polling or a webhook) and its subscriptions (a chat, maybe a topic)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from bot.settings.tables import ChannelSettings, EnvName, FieldProblem, Subscription, quote_value, shaped

_q = quote_value

TelegramUserId = Annotated[
    str,
    shaped(
        r"[1-9][0-9]{0,19}",
        'is not a Telegram user id; usernames change, so write the number, e.g. "123456789" '
        "(docs/telegram-setup.md says how to find it)",
    ),
]


class TelegramSubscription(Subscription):
    """A Telegram route: a chat (a private chat with a person, a group, a channel's discussion group) and, in a forum
    supergroup, a topic: one fixed topic, or one topic per agent (like Slack's thread per agent)."""

    chat: int | str
    topic: int | Literal["agent"] | None = None
    responders: list[TelegramUserId] = Field(default_factory=list)

    @field_validator("chat")
    @classmethod
    def _check_chat(cls, chat: int | str) -> int | str:
        if isinstance(chat, str) and not re.fullmatch(r"@[A-Za-z][A-Za-z0-9_]{3,31}", chat):
            raise ValueError(
                f"{_q(chat)} is not a chat; write its numeric id (e.g. -1001234567890 for a group, a user's id for "
                'a private chat) or a public "@channelname"'
            )
        if isinstance(chat, int) and chat == 0:
            raise ValueError("0 is not a chat id; docs/telegram-setup.md says how to find the chat's id")
        return chat

    @field_validator("topic")
    @classmethod
    def _check_topic(cls, topic: int | str | None) -> int | str | None:
        if isinstance(topic, int) and topic < 1:
            raise ValueError(f'{topic} is not a topic id; write the topic\'s message_thread_id, or "agent"')
        return topic


class TelegramSettings(ChannelSettings[TelegramSubscription]):
    """The Telegram bot: long polling (the default, no public URL needed) or a webhook on `handraise serve`."""

    mode: Literal["polling", "webhook"] = "polling"
    bot_token_env: EnvName = "TELEGRAM_BOT_TOKEN"
    webhook_url: str | None = None
    """The public https URL that reaches serve's `/telegram/webhook` (webhook mode)."""
    webhook_secret_env: EnvName | None = None
    """The secret Telegram sends back in X-Telegram-Bot-Api-Secret-Token (webhook mode)."""
    api_url: str = "https://api.telegram.org"

    @field_validator("api_url")
    @classmethod
    def _check_api_url(cls, api_url: str) -> str:
        if not re.fullmatch(r"https?://[^/\s]+(/[^\s]*)?", api_url):
            raise ValueError(f'{_q(api_url)} is not an http(s) URL; write e.g. "https://api.telegram.org"')
        return api_url.rstrip("/")

    @field_validator("webhook_url")
    @classmethod
    def _check_webhook_url(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https://[^/\s]+(/[^\s]*)?", url):
            raise ValueError(
                f'{_q(url)} is not an https URL; Telegram only posts to https, e.g. "https://bot.example.com/telegram/webhook"'
            )
        return url

    @model_validator(mode="after")
    def _check_webhook(self) -> TelegramSettings:
        if self.mode != "webhook":
            return self
        if self.webhook_url is None:
            raise FieldProblem(
                'required when mode = "webhook": the public https URL of serve\'s /telegram/webhook', "webhook_url"
            )
        if self.webhook_secret_env is None:
            raise FieldProblem(
                'required when mode = "webhook", so that only Telegram can post answers; '
                'set webhook_secret_env = "TELEGRAM_WEBHOOK_SECRET" and export a random secret '
                "(1-256 of A-Z a-z 0-9 _ -)",
                "webhook_secret_env",
            )
        return self
