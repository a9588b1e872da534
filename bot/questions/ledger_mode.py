"""The two facts every part of the ledger checks before trusting memory: whether a change feed runs (other replicas
write the store too) and whether the program is closing (waiting is over, and the store is the truth again)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LedgerMode:
    """One per ledger, shared by its parts; `Ledger.following` and `Ledger.close` set it."""

    following: bool = False
    """Set while a change feed runs: other replicas change the store too, and `refresh` hears of it."""
    closing: bool = False
    """Set while the program shuts down: waiting answerers are cancelled, but their questions stay pending."""

    @property
    def reads_store(self) -> bool:
        """Whether a question's record must be read from the store even when one is held here: only while this
        process alone writes the store does its own copy keep up."""
        return self.following or self.closing
