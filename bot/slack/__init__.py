"""The Slack answerer: questions in Slack threads, answered with a click, a modal or a thread reply.

`SlackChannel` is the channel the handraise program installs; `SlackAnswerer` puts it on any `core.Context`
(`ctx.plugin(SlackAnswerer, settings)`). Rendering (`render_question`, `render_outcome`) and parsing
(`parse_thread_reply`) are pure and usable on their own. The names load on first use: slack-bolt is slow to import,
and the registry (`bot.kinds`) only needs `bot.slack.kind`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.channels.lazy_names import lazy_names

if TYPE_CHECKING:
    from bot.slack.answerer import SlackAnswerer as SlackAnswerer
    from bot.slack.channel import SlackChannel as SlackChannel
    from bot.slack.parse import parse_thread_reply as parse_thread_reply
    from bot.slack.render import RenderError as RenderError
    from bot.slack.render import SlackMessage as SlackMessage
    from bot.slack.render import render_outcome as render_outcome
    from bot.slack.render import render_question as render_question
    from bot.slack.settings import SlackSettings as SlackSettings
    from bot.slack.settings import SlackSubscription as SlackSubscription

_WHERE = {
    "SlackAnswerer": "bot.slack.answerer",
    "SlackChannel": "bot.slack.channel",
    "parse_thread_reply": "bot.slack.parse",
    "RenderError": "bot.slack.render",
    "SlackMessage": "bot.slack.render",
    "render_outcome": "bot.slack.render",
    "render_question": "bot.slack.render",
    "SlackSettings": "bot.slack.settings",
    "SlackSubscription": "bot.slack.settings",
}

__all__ = (
    "RenderError",
    "SlackAnswerer",
    "SlackChannel",
    "SlackMessage",
    "SlackSettings",
    "SlackSubscription",
    "parse_thread_reply",
    "render_outcome",
    "render_question",
)

__getattr__ = lazy_names(__name__, _WHERE)
