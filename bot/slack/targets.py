"""Which open question a Slack reply answers, when a thread (or a DM) holds several. Pure.

A reply that links to one question's message (⋮ → Copy link) answers that question; `1: yes` lines answer the open
questions by their number in the conversation; with one question open, the whole reply is its answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.slack.ids import SlackRef
from bot.slack.parse import ReplyError, numbered_lines, strip_leading_mentions

_LINK = re.compile(r"<?https?://[^\s<>|]*/archives/([A-Z0-9]+)/p([0-9]{10})([0-9]{6})[^\s<>|]*(?:\|[^>]*)?>?")


@dataclass(frozen=True)
class Target:
    """Part of a reply (`text`, still in Slack's markup) meant for the open question at `index`."""

    index: int
    text: str


def message_link(ref: SlackRef) -> str:
    """A link to the question's message, as Slack's Copy link gives it (without the workspace's own host)."""
    return f"https://slack.com/archives/{ref.channel}/p{ref.ts.replace('.', '')}"


def targets(text: str, open_questions: Sequence[tuple[SlackRef, str]]) -> list[Target]:
    """Split `text` among `open_questions` ((where its message is, its title), oldest first).

    Raises ReplyError saying how to address one question when the reply could be for any of several.
    """
    for match in _LINK.finditer(text):
        ts = f"{match[2]}.{match[3]}"
        for index, (ref, _) in enumerate(open_questions):
            if (ref.channel, ref.ts) == (match[1], ts):
                return [Target(index, (text[: match.start()] + text[match.end() :]).strip())]
    if len(open_questions) == 1:
        return [Target(0, text)]
    parts = numbered_lines(strip_leading_mentions(text), len(open_questions), noun="question")
    if parts:
        return [Target(number - 1, part) for number, part in sorted(parts.items())]
    listed = "\n".join(f"{number}. {title}" for number, (_, title) in enumerate(open_questions, start=1))
    raise ReplyError(
        f"{len(open_questions)} questions are open here:\n{listed}\n"
        "Reply with one line per question, like `1: yes`, or paste the link to one question's message "
        "(⋮ → Copy link) in your reply, or use its buttons."
    )
