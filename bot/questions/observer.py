"""What the ledger and the channels tell whoever counts questions (the program's `/metrics`), without knowing who.

The ledger calls its observer for this process's own changes only: another replica's asks and answers are counted
by that replica, so summing every replica's counts gives each question once.
"""

from __future__ import annotations

from typing import Protocol

from bot.store.records import QuestionRecord


class QuestionObserver(Protocol):
    """Told of questions asked and ended here, and of channels that failed to show something."""

    def asked(self, record: QuestionRecord, write_seconds: float) -> None:
        """This process stored the new question `record`; the store took `write_seconds` to commit it."""
        ...

    def resolved(self, record: QuestionRecord, write_seconds: float) -> None:
        """This process ended `record` (answered, cancelled, expired or failed) and its end won."""
        ...

    def send_failed(self, channel: str) -> None:
        """`channel` could not show a question, a reminder, an outcome or a note."""
        ...


class NoObserver:
    """The observer of a ledger nobody counts (an embedded `bot.install`, tests)."""

    def asked(self, record: QuestionRecord, write_seconds: float) -> None:
        pass

    def resolved(self, record: QuestionRecord, write_seconds: float) -> None:
        pass

    def send_failed(self, channel: str) -> None:
        pass
