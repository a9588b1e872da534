"""The Telegram answerer: questions as messages with inline keyboards, answered with a tap or a reply.

`TelegramChannel` is the channel the handraise program installs. Rendering (`render_question`, `render_outcome`)
and reading (`read_words`) are pure and usable on their own. The names load on first use: python-telegram-bot is
imported only when Telegram runs, and the registry (`bot.kinds`) only needs `bot.telegram.kind`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.channels.lazy_names import lazy_names

if TYPE_CHECKING:
    from bot.telegram.channel import TelegramChannel as TelegramChannel
    from bot.telegram.parse import read_words as read_words
    from bot.telegram.render import TelegramMessage as TelegramMessage
    from bot.telegram.render import render_outcome as render_outcome
    from bot.telegram.render import render_question as render_question
    from bot.telegram.settings import TelegramSettings as TelegramSettings
    from bot.telegram.settings import TelegramSubscription as TelegramSubscription

_WHERE = {
    "TelegramChannel": "bot.telegram.channel",
    "read_words": "bot.telegram.parse",
    "TelegramMessage": "bot.telegram.render",
    "render_outcome": "bot.telegram.render",
    "render_question": "bot.telegram.render",
    "TelegramSettings": "bot.telegram.settings",
    "TelegramSubscription": "bot.telegram.settings",
}

__all__ = (
    "TelegramChannel",
    "TelegramMessage",
    "TelegramSettings",
    "TelegramSubscription",
    "read_words",
    "render_outcome",
    "render_question",
)

__getattr__ = lazy_names(__name__, _WHERE)
