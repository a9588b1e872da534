"""What the ledger keeps to follow other replicas' changes (`Ledger.refresh`): long polls by question, and what this
process has already told its watchers, so that the change feed's echo of its own writes is not news.

Only while a change feed runs (PostgreSQL): with SQLite nothing here is filled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.questions.tasks import Latch
from bot.store.records import QuestionRecord

ENDED_KEPT_SECONDS = 300.0
"""How long an end is remembered: the feed's echo of it comes within the catch-up's reach of a few seconds."""

Stamp = tuple[str, int, int, int]
"""What watchers care about in a record: status, partial answers, approvals, reminders. Only ever grows."""


def stamp(record: QuestionRecord) -> Stamp:
    return (record.status, len(record.partial), len(record.approvals), record.reminders)


def ahead(new: Stamp, old: Stamp) -> bool:
    """Whether `new` is later than `old`: a read that raced a write this process made can be older than it."""
    return new != old and all(a >= b for a, b in zip(new[1:], old[1:], strict=True))


@dataclass(frozen=True, slots=True)
class Stored:
    """A question as the store has it now, with the channels that have shown it (what the change feed reads)."""

    record: QuestionRecord
    channels: tuple[str, ...] = ()


class Watch:
    """Long polls on one question this process does not hold."""

    __slots__ = ("latch", "waiting")

    def __init__(self) -> None:
        self.latch = Latch()
        self.waiting = 0


class Watches:
    """Long polls on questions this process does not hold, by id, woken when the change feed sees them end."""

    def __init__(self) -> None:
        self._by_id: dict[str, Watch] = {}

    def __contains__(self, question_id: object) -> bool:
        return question_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, question_id: str) -> Watch:
        watch = self._by_id.get(question_id)
        if watch is None:
            watch = self._by_id[question_id] = Watch()
        watch.waiting += 1
        return watch

    def discard(self, question_id: str, watch: Watch) -> None:
        watch.waiting -= 1
        if watch.waiting <= 0 and self._by_id.get(question_id) is watch:
            del self._by_id[question_id]

    def wake(self, question_id: str) -> None:
        watch = self._by_id.pop(question_id, None)
        if watch is not None:
            watch.latch.set()


class Told:
    """What this process told its watchers of questions it does not hold, and which ends it told of, lately."""

    def __init__(self) -> None:
        self._unheld: dict[str, tuple[Stamp, tuple[str, ...]]] = {}
        """Pending questions another replica holds: as last told, and the channels known to show them."""
        self._ended: dict[str, float] = {}
        """Ends told of, by when (oldest first), kept ENDED_KEPT_SECONDS."""

    def held(self, question_id: str) -> None:
        """This process holds it now: its `PendingQuestion` says what was told."""
        self._unheld.pop(question_id, None)

    def ended(self, question_id: str) -> bool:
        return question_id in self._ended

    def end(self, question_id: str) -> bool:
        """Note an end told of; False when it was told already."""
        if question_id in self._ended:
            return False
        self._unheld.pop(question_id, None)
        self._ended[question_id] = time.monotonic()
        return True

    def forget_old_ends(self) -> None:
        oldest = time.monotonic() - ENDED_KEPT_SECONDS
        while self._ended:
            question_id, when = next(iter(self._ended.items()))
            if when > oldest:
                break
            del self._ended[question_id]

    def move(self, record: QuestionRecord) -> bool:
        """Note a change this process made to a question it does not hold; False when the feed told of it first."""
        known = self._unheld.get(record.id)
        now = stamp(record)
        if known is not None and not ahead(now, known[0]):
            return False
        self._unheld[record.id] = (now, known[1] if known is not None else ())
        return True

    def read(self, stored: Stored) -> tuple[bool, bool, tuple[str, ...]]:
        """Note a pending question as the feed read it: whether it is new here, whether it moved on, and the
        channels newly showing it."""
        record, now = stored.record, stamp(stored.record)
        known = self._unheld.get(record.id)
        if known is None:
            self._unheld[record.id] = (now, stored.channels)
            return True, False, stored.channels
        known_stamp, known_channels = known
        moved = ahead(now, known_stamp)
        shown = tuple(channel for channel in stored.channels if channel not in known_channels)
        if moved or shown:
            self._unheld[record.id] = (now if moved else known_stamp, (*known_channels, *shown))
        return False, moved, shown
