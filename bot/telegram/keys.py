"""The `callback_data` handraise puts on inline buttons: short keys for positions, never a label, so that every
button fits Telegram's 64 bytes whatever the agent wrote.

    p:<q>:<o>          answers question q with option o at once (single-select, plan review)
    t:<q>:<o>:<mask>   toggles option o of multi-select question q; `mask` is the selection shown (hex bits)
    s:<q>:<mask>       submits multi-select question q with the selection `mask`
    w:<q>              asks for words: the bot sends a ForceReply prompt for question q

A multi-select selection lives in the buttons themselves, so it survives a restart and a replayed tap sets the same
selection again instead of undoing it. `q` is the question's position: a tap on an earlier question's keyboard
(several questions are asked one by one in the same message) is recognised as stale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from telegram import InlineKeyboardMarkup

MAX_CALLBACK_BYTES = 64
MAX_OPTIONS = 60
"""Options one question may have here: Telegram caps a keyboard at about 100 buttons, and a mask of 60 bits keeps
every key far inside 64 bytes."""

TapKind = Literal["pick", "toggle", "submit", "write"]

_KEY = re.compile(
    r"(?:p:(?P<pq>[0-9]{1,3}):(?P<po>[0-9]{1,3})"
    r"|t:(?P<tq>[0-9]{1,3}):(?P<to>[0-9]{1,3}):(?P<tm>[0-9a-f]{1,16})"
    r"|s:(?P<sq>[0-9]{1,3}):(?P<sm>[0-9a-f]{1,16})"
    r"|w:(?P<wq>[0-9]{1,3}))"
)


@dataclass(frozen=True)
class Tap:
    """What a button means: its kind, the question's position, an option's position, the selection shown."""

    kind: TapKind
    question: int
    option: int = 0
    mask: int = 0


def pick(question: int, option: int) -> str:
    return f"p:{question}:{option}"


def toggle(question: int, option: int, mask: int) -> str:
    return f"t:{question}:{option}:{mask:x}"


def submit(question: int, mask: int) -> str:
    return f"s:{question}:{mask:x}"


def write(question: int) -> str:
    return f"w:{question}"


def read_tap(data: object) -> Tap | None:
    """The meaning of one of our keys, or None for anything else (another bot's data, garbage, oversize)."""
    if not isinstance(data, str) or len(data.encode()) > MAX_CALLBACK_BYTES or not (match := _KEY.fullmatch(data)):
        return None
    if match["pq"] is not None:
        return Tap("pick", int(match["pq"]), int(match["po"]))
    if match["tq"] is not None:
        return Tap("toggle", int(match["tq"]), int(match["to"]), int(match["tm"], 16))
    if match["sq"] is not None:
        return Tap("submit", int(match["sq"]), mask=int(match["sm"], 16))
    return Tap("write", int(match["wq"]))


def selected(mask: int, count: int) -> list[int]:
    """The option positions set in `mask`, among the first `count`."""
    return [index for index in range(count) if mask >> index & 1]


def shows_our_keyboard(markup: InlineKeyboardMarkup | None) -> bool:
    """Whether a message's keyboard has one of our buttons: the message is a question's, not a notice's."""
    if markup is None:
        return False
    return any(read_tap(button.callback_data) is not None for row in markup.inline_keyboard for button in row)
