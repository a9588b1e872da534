"""The email answerer: questions go out as readable mail, replies from any mail client come back as answers.

The names load on first use, so that the registry (`bot.kinds`) only needs `bot.email.kind`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.channels.lazy_names import lazy_names

if TYPE_CHECKING:
    from bot.email.binding import ReplyBinding as ReplyBinding
    from bot.email.channel import EmailChannel as EmailChannel
    from bot.email.classify import refusal as refusal
    from bot.email.parse import ParsedReply as ParsedReply
    from bot.email.parse import parse_reply as parse_reply
    from bot.email.reading import new_text as new_text
    from bot.email.render import render_question_email as render_question_email

_WHERE = {
    "ReplyBinding": "bot.email.binding",
    "EmailChannel": "bot.email.channel",
    "refusal": "bot.email.classify",
    "ParsedReply": "bot.email.parse",
    "parse_reply": "bot.email.parse",
    "new_text": "bot.email.reading",
    "render_question_email": "bot.email.render",
}

__all__ = ("EmailChannel", "ParsedReply", "ReplyBinding", "new_text", "parse_reply", "refusal", "render_question_email")

__getattr__ = lazy_names(__name__, _WHERE)
