"""The Slack answerer: questions in Slack threads, answered with a click, a modal or a thread reply.

`SlackChannel` is the channel the handraise program installs; `SlackAnswerer` puts it on any `core.Context`
(`ctx.plugin(SlackAnswerer, settings)`). Rendering (`render_question`, `render_outcome`) and parsing
(`parse_thread_reply`) are pure and usable on their own.
"""

from bot.slack.answerer import SlackAnswerer as SlackAnswerer
from bot.slack.channel import SlackChannel as SlackChannel
from bot.slack.parse import parse_thread_reply as parse_thread_reply
from bot.slack.render import RenderError as RenderError
from bot.slack.render import SlackMessage as SlackMessage
from bot.slack.render import render_outcome as render_outcome
from bot.slack.render import render_question as render_question

__all__ = (
    "RenderError",
    "SlackAnswerer",
    "SlackChannel",
    "SlackMessage",
    "parse_thread_reply",
    "render_outcome",
    "render_question",
)
