"""The email answerer: questions go out as readable mail, replies from any mail client come back as answers."""

from bot.email.binding import ReplyBinding as ReplyBinding
from bot.email.channel import EmailChannel as EmailChannel
from bot.email.classify import refusal as refusal
from bot.email.parse import ParsedReply as ParsedReply
from bot.email.parse import parse_reply as parse_reply
from bot.email.reading import new_text as new_text
from bot.email.render import render_question_email as render_question_email

__all__ = ("EmailChannel", "ParsedReply", "ReplyBinding", "new_text", "parse_reply", "refusal", "render_question_email")
