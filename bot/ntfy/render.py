"""A question as ntfy's JSON publish format (https://docs.ntfy.sh/publish/#publish-as-json), and the follow-up that
says how it ended. Pure: the tap tokens come in already signed.

Text is sent verbatim (`markdown` is never set, so nothing an agent writes is formatted or hidden), within ntfy's
limit of 4,096 bytes per message: a longer one is cut, its start shown, and the whole question is one tap away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from bot.questions.approvals import progress
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem

MAX_MESSAGE_BYTES = 4096
"""ntfy's message limit; a longer body would arrive as an attachment instead of a notification."""
MAX_TITLE = 200
MAX_ACTIONS = 3
"""ntfy shows at most three action buttons."""
CUT = "…"
ASKED_PRIORITY = 4
PROGRESS_PRIORITY = 3
OUTCOME_PRIORITY = 2
OPEN_LABEL = "Open question"

TapToken = Callable[[int, int], str]
"""Signs a tap on option `option` of question `index`."""


def page_url(public_url: str, question_id: str) -> str:
    """The question's card in the web inbox (signing in first when the browser has no session yet)."""
    return f"{public_url.rstrip('/')}/#card-{quote(question_id, safe='')}"


def tap_url(public_url: str) -> str:
    return f"{public_url.rstrip('/')}/ntfy/taps"


def cut_bytes(text: str, limit: int) -> str:
    """`text` within `limit` UTF-8 bytes: whole when it fits, else its start and "…"."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    room = limit - len(CUT.encode("utf-8"))
    return raw[:room].decode("utf-8", errors="ignore") + CUT


def _cut_chars(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + CUT


def tappable(record: QuestionRecord) -> bool:
    """Whether each option can be one tap: one question, one choice, one to three options, none that needs words."""
    if len(record.questions) != 1:
        return False
    question = record.questions[0]
    options = question.options or []
    if question.multi_select or not 1 <= len(options) <= MAX_ACTIONS:
        return False
    intent = question.intent
    return intent is None or all(option.label in (intent.approve, intent.reject) for option in options)


def _question_text(question: AskUserQuestionItem, listed: bool) -> str:
    lines = [question.header] if question.header else []
    lines.append(question.question)
    if listed:
        lines += [f"{number}. {option.label}" for number, option in enumerate(question.options or [], 1)]
    if question.detail:
        lines += ["", question.detail]
    return "\n".join(lines)


def title(record: QuestionRecord) -> str:
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    return _cut_chars(f"{agent} asks" if agent else "A question for you", MAX_TITLE)


def render_question(record: QuestionRecord, topic: str, public_url: str, tap_token: TapToken) -> dict[str, Any]:
    """The publish body for `record`: its text, a click to its page, and its options as `http` actions (or one
    `view` action to its page when they cannot be single taps)."""
    one_tap = tappable(record)
    parts = [_question_text(question, listed=not one_tap) for question in record.questions]
    if len(parts) > 1:
        parts = [f"{number}) {part}" for number, part in enumerate(parts, 1)]
    page = page_url(public_url, record.id)
    actions: list[dict[str, Any]]
    if one_tap:
        actions = [
            {
                "action": "http",
                "label": option.label,
                "url": tap_url(public_url),
                "method": "POST",
                "headers": {"Content-Type": "application/json"},
                "body": f'{{"tap":"{tap_token(0, number)}"}}',
                "clear": True,
            }
            for number, option in enumerate(record.questions[0].options or [])
        ]
    else:
        actions = [{"action": "view", "label": OPEN_LABEL, "url": page, "clear": False}]
    return {
        "topic": topic,
        "title": title(record),
        "message": cut_bytes("\n\n".join(parts), MAX_MESSAGE_BYTES),
        "click": page,
        "priority": ASKED_PRIORITY,
        "tags": ["raising_hand"],
        "actions": actions,
    }


def render_reminder(
    record: QuestionRecord, topic: str, public_url: str, tap_token: TapToken, count: int
) -> dict[str, Any]:
    """A reminder: the question published again, as it was (its actions answer it too, each with a token of its
    own), titled as reminder `count`. ntfy cannot bring back a notification that was swiped away, so a new one
    it is."""
    message = render_question(record, topic, public_url, tap_token)
    message["title"] = _cut_chars(f"Reminder {count}: {message['title']}", MAX_TITLE)
    message["tags"] = ["alarm_clock"]
    return message


def render_progress(record: QuestionRecord, topic: str, public_url: str, needed: int) -> dict[str, Any]:
    """How far a question that needs `needed` approvals has come ("1 of 2 approvals: alice@example.org"), with nothing
    to tap: the question's own notification still carries its actions, and an approver counts once."""
    title = f"{progress(record, needed)} — waiting for more"
    return _follow_up(record, topic, public_url, title, PROGRESS_PRIORITY, "hourglass_flowing_sand")


def _follow_up(
    record: QuestionRecord, topic: str, public_url: str, title: str, priority: int, tag: str
) -> dict[str, Any]:
    """A notification about `record` with nothing to tap: `title`, the (first) question's text, a click to its page."""
    asked = record.questions[0].question if record.questions else ""
    return {
        "topic": topic,
        "title": _cut_chars(title, MAX_TITLE),
        "message": cut_bytes(asked, MAX_MESSAGE_BYTES),
        "click": page_url(public_url, record.id),
        "priority": priority,
        "tags": [tag],
    }


_ENDED = {"cancelled": "Cancelled", "expired": "Expired", "failed": "Failed"}


def render_outcome(record: QuestionRecord, topic: str, public_url: str, titles: dict[str, str]) -> dict[str, Any]:
    """The follow-up published when a question ends other than by a tap here (ntfy cannot edit what it sent): who
    answered, where, or that it was cancelled or expired, so that nobody taps a question that is over."""
    if record.status == "answered":
        where = titles.get(record.answered_via or "", record.answered_via or "handraise")
        headline = f"Answered by {record.answered_by or 'someone'} in {where}"
    else:
        headline = _ENDED.get(record.status, record.status.capitalize())
        if record.error_message:
            headline += f": {record.error_message}"
    tag = "white_check_mark" if record.status == "answered" else "no_entry_sign"
    return _follow_up(record, topic, public_url, f"{headline} — nothing more to do", OUTCOME_PRIORITY, tag)
