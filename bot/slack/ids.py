"""The ids and values handraise puts on Block Kit elements: short keys for a question's and an option's position,
never a label, so that any label fits the 150-character option value and 255-character id limits.

    hr.pick.<q>.<o>   a button that answers question q with option o at once
    hr.choose.<q>     a radio group or menu that answers question q at once
    hr.hold.<q>       a selection kept in the message (per user) until Submit
    hr.text.<q>       opens the free-text modal (Other…, Answer…, Request changes…)
    hr.submit         sends the held selections
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

ACTION_PATTERN = re.compile(r"^hr\.")
"""Every action handraise renders; bolt routes these to the channel."""

SUBMIT = "hr.submit"
MODAL_CALLBACK = "hr.answer"
MODAL_CHOICE = "choice"
MODAL_TEXT = "text"

ActionKind = Literal["pick", "choose", "hold", "text", "submit"]

_OPTION = re.compile(r"[0-9]{1,4}")
_ACTION = re.compile(r"hr\.(?:(pick)\.([0-9]{1,4})\.([0-9]{1,4})|(choose|hold|text)\.([0-9]{1,4})|(submit))")


@dataclass(frozen=True)
class ActionId:
    kind: ActionKind
    question: int = 0
    option: int = 0


def pick(question: int, option: int) -> str:
    return f"hr.pick.{question}.{option}"


def choose(question: int) -> str:
    return f"hr.choose.{question}"


def hold(question: int) -> str:
    return f"hr.hold.{question}"


def text(question: int) -> str:
    return f"hr.text.{question}"


def choice_block(question: int) -> str:
    return f"hr.q{question}.choice"


def modal_choice_block(question: int) -> str:
    return f"hr.m{question}.choice"


def modal_text_block(question: int) -> str:
    return f"hr.m{question}.text"


def option_value(option: int) -> str:
    return str(option)


def read_action_id(action_id: object) -> ActionId | None:
    """The meaning of one of our action ids, or None for anything else."""
    if not isinstance(action_id, str) or not (match := _ACTION.fullmatch(action_id)):
        return None
    if match[1]:
        return ActionId("pick", int(match[2]), int(match[3]))
    if match[4]:
        return ActionId(match[4], int(match[5]))  # type: ignore[arg-type]
    return ActionId("submit")


def read_option_value(value: object) -> int | None:
    if isinstance(value, str) and _OPTION.fullmatch(value):
        return int(value)
    return None


@dataclass(frozen=True)
class ModalRef:
    """What a modal remembers in its private_metadata: the question and the message it was opened from."""

    question_id: str
    channel: str
    ts: str
    thread_ts: str | None = None

    def dump(self) -> str:
        return json.dumps({"q": self.question_id, "c": self.channel, "ts": self.ts, "th": self.thread_ts})

    @classmethod
    def load(cls, text: object) -> ModalRef | None:
        """The reference in `text`, or None when it is not one of ours."""
        if not isinstance(text, str) or len(text) > 3000:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        fields = [data.get(key) for key in ("q", "c", "ts")]  # pyright: ignore[reportUnknownMemberType]
        thread = data.get("th")  # pyright: ignore[reportUnknownMemberType]
        if not all(isinstance(field, str) and field for field in fields) or not isinstance(thread, str | None):
            return None
        question_id, channel, ts = (str(field) for field in fields)
        return cls(question_id, channel, ts, thread)


class SlackRef(BaseModel):
    """What the Slack channel keeps about a posted question: where the message is, to update it and to find the
    question a thread reply is about."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    channel: str
    ts: str
    thread_ts: str | None = None
    """The thread the message was posted in (an agent's earlier question), None when it starts its own."""
    destination: str = ""
    """The channel or user the route named, as written in the config (`#deploys`, `U0123`)."""

    @property
    def key(self) -> str:
        """The delivery key: the message's conversation and ts."""
        return f"{self.channel}:{self.ts}"

    @property
    def thread(self) -> tuple[str, str]:
        """The (conversation, thread ts) replies to this message arrive in."""
        return self.channel, self.thread_ts or self.ts
