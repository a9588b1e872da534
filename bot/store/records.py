"""What the store keeps: questions, their deliveries, resolutions and audit events, as frozen pydantic models.

These are the bot's own records, not the wire: the question and answer payloads inside them are the seam's wire
types (`core.types`), which the store writes in their camelCase wire form.
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem

if TYPE_CHECKING:
    from core import Agent

QuestionStatus = Literal["pending", "answered", "cancelled", "expired", "failed"]
"""`pending` until exactly one resolution moves it to one of the other four, for good."""

AuditKind = Literal[
    "asked",
    "delivered",
    "escalated",
    "answered",
    "partial",
    "approved",
    "reminded",
    "refused",
    "duplicate",
    "cancelled",
    "expired",
    "failed",
    "retracted",
    "rule",
]
"""`rule` is a permission prompt a rule decided without a person: it has no question (`question_id` is None), its
`actor` is the asking agent's id, and its detail names the rule, the decision and the request."""


def _as_utc(value: datetime) -> datetime:
    # One zone everywhere, so that a record read back from the store compares equal to the one written.
    return value.astimezone(UTC)


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_as_utc)]
"""An aware datetime, normalised to UTC. Naive datetimes are refused: a local time in the store is a future bug."""


def utc_now() -> datetime:
    return datetime.now(UTC)


_SORTABLE_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
"""Base 62 in ASCII order, so that the text order of the ids is the order of their times."""

_RANDOM_BYTES = 12
"""Per id: 96 bits, 16 url-safe characters (12 bytes are 4 whole base64 groups: no padding, no shared group)."""
_RANDOM_CHARACTERS = _RANDOM_BYTES * 4 // 3
_IDS_PER_DRAW = 256

_random_parts: deque[str] = deque()
# A child process must never hand out its parent's unused draws: the two would make the same ids.
os.register_at_fork(after_in_child=_random_parts.clear)
_stamp: tuple[int, str] = (-1, "")


def _random_part() -> str:
    """16 url-safe characters from `secrets`, drawn 256 ids at a time: one system call per 256 ids, not one each.

    Safe across threads without a lock: each `popleft` hands a part to exactly one caller, and a refill only adds.
    """
    while True:
        try:
            return _random_parts.popleft()
        except IndexError:
            text = base64.urlsafe_b64encode(secrets.token_bytes(_RANDOM_BYTES * _IDS_PER_DRAW)).decode()
            step = _RANDOM_CHARACTERS
            _random_parts.extend(text[start : start + step] for start in range(0, len(text), step))


def _time_part(millis: int) -> str:
    """`millis` as 7 base-62 digits; the last one made is kept, as many ids are made in the same millisecond."""
    global _stamp
    last = _stamp  # one read: another thread may replace it meanwhile
    if last[0] == millis:
        return last[1]
    digits = []
    rest = millis
    for _ in range(7):
        rest, digit = divmod(rest, 62)
        digits.append(_SORTABLE_DIGITS[digit])
    text = "".join(reversed(digits))
    _stamp = (millis, text)
    return text


def new_question_id() -> str:
    """A fresh question id: `q_`, the time in milliseconds (7 base-62 digits, so ids sort by when they were made),
    and 16 url-safe random characters (96 bits from `secrets`, unguessable in a link).

    The time first keeps the store's indexes on question ids (the questions, their deliveries, their audit events)
    writing to the same few recent pages, instead of a random page per new question: a commit writes fewer pages.
    """
    return "q_" + _time_part(time.time_ns() // 1_000_000) + _random_part()


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class AgentRef(_Record):
    """A snapshot of the asking agent: the live `Agent` is gone after a restart, its identity must not be."""

    id: str
    name: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def from_agent(cls, agent: Agent) -> AgentRef:
        return cls(id=agent.id, name=agent.name, labels=dict(agent.labels))


class Approval(_Record):
    """One person's approval of a question that needs several (`approvals = k` on its route).

    `identity` is who they are across channels (an email address when the channel knows it), so the same person
    approving in Slack and by email counts once; `by` is how the channel named them.
    """

    by: str
    via: str
    identity: str
    at: UtcDatetime = Field(default_factory=utc_now)


class QuestionRecord(_Record):
    """One `ask_user_question` request and its outcome.

    `origin` says who waits for it: `api` requests were asked over HTTP and are resumed after a restart; `local`
    ones were asked in-process, so their caller died with the process. `partial` holds the answers collected so far
    for a multi-question request, by question id; `approvals` the approvals so far of one that needs several.
    `reminders` counts the reminders sent (each channel keeps when its next is due with its delivery).
    `answered_by`/`answered_via` name who resolved it and over which
    channel (`slack`, `email`, `web`, `api`); `error_code`/`error_message` explain a cancelled, expired or failed one.
    """

    id: str = Field(default_factory=new_question_id)
    created_at: UtcDatetime = Field(default_factory=utc_now)
    agent: AgentRef | None = None
    questions: list[AskUserQuestionItem]
    origin: Literal["api", "local"] = "local"
    status: QuestionStatus = "pending"
    answer: AskUserQuestionAnswer | None = None
    partial: dict[str, AskUserQuestionAnswerItem] = Field(default_factory=dict)
    approvals: list[Approval] = Field(default_factory=list)
    reminders: int = 0
    answered_by: str | None = None
    answered_via: str | None = None
    resolved_at: UtcDatetime | None = None
    error_code: str | None = None
    error_message: str | None = None
    permission: dict[str, Any] | None = None
    """For a coding agent's permission prompt (`POST /v1/permissions`): the request as the hook sent it
    (`bot.permissions.prompt.Permission.to_wire`), so that "Always allow" learns the right rule on any replica, also
    after a restart."""


class LearnedRule(_Record):
    """A rule "Always allow" stored: the very request it was chosen for (the agent's tool label, the project, the
    tool and the request text) is allowed from now on without a person. `id` is derived from those four, so the same
    request learned twice is one rule; `question_id` and `by` say where it was learned."""

    id: str
    agent: str
    project: str
    tool: str
    request: str
    learned_at: UtcDatetime = Field(default_factory=utc_now)
    question_id: str | None = None
    by: str | None = None


class PushSubscription(_Record):
    """A browser that asked for Web Push notifications: `endpoint` (the push service's URL for that device, which
    identifies it), the keys the payload is encrypted to (RFC 8291), and the signed-in person it belongs to."""

    endpoint: str
    person: str
    p256dh: str
    auth: str
    created_at: UtcDatetime = Field(default_factory=utc_now)


class Delivery(_Record):
    """Where a question was sent on one channel.

    `key` is the channel's lookup key for an incoming reply (Slack `"C123:1712345.0001"`, an email token) and is
    unique per channel; `ref` is whatever else the channel needs to update or retract the message later.
    """

    question_id: str
    channel: str
    key: str
    ref: dict[str, Any] = Field(default_factory=dict)
    created_at: UtcDatetime = Field(default_factory=utc_now)


class AuditEvent(_Record):
    """One line of the append-only audit log. `seq` orders events across the whole store; only a `rule` line has no
    question."""

    seq: int
    at: UtcDatetime
    question_id: str | None
    kind: AuditKind
    channel: str | None = None
    actor: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    prev: str | None = None
    """The previous row's hash (`bot.store.chain`); None for rows written before the store kept a chain."""
    hash: str | None = None
    """SHA-256 over `prev` and this row as stored, 64 lowercase hex characters."""


class Resolution(_Record):
    """The outcome of `Store.resolve`: `won` is False when the question was already resolved, and `record` then
    shows by whom and how."""

    won: bool
    record: QuestionRecord


REMINDED_KEY = "reminded"
"""In a delivery's reference, kept by the base: how many reminders that channel has sent."""
REMIND_AT_KEY = "remind_at"
"""Likewise: when its next reminder is due (UTC, ISO 8601)."""
SEEN_EVENTS_KEPT = timedelta(days=1)
"""How long an event id is remembered: Slack re-delivers within minutes (its last retry comes after five)."""


class NewDelivery(NamedTuple):
    """A delivery stored with its new question (`create_question`), in the same write: a channel whose delivery is
    only this row, nothing sent out (the web inbox), first to take an API question."""

    channel: str
    key: str
    ref: dict[str, Any]


def asked_detail(agent_id: str | None, question_ids: Iterable[str]) -> str:
    """The `asked` event's detail as JSON (`json.dumps` of `{"agent": …, "questions": […]}`, byte for byte), built
    without the encoder's per-call set-up: every ask writes one."""
    agent = "null" if agent_id is None else encode_basestring_ascii(agent_id)
    return f'{{"agent": {agent}, "questions": [{", ".join(map(encode_basestring_ascii, question_ids))}]}}'


def key_detail(key: str) -> str:
    """The `delivered` event's detail as JSON (`{"key": …}`), likewise."""
    return f'{{"key": {encode_basestring_ascii(key)}}}'
