"""Which questions the bulk approval form lists."""

from __future__ import annotations

from bot.store.records import QuestionRecord


def approvable(record: QuestionRecord) -> bool:
    """A lone plan review (one question with an approve option) still waiting: what the form lists."""
    if record.status != "pending" or len(record.questions) != 1:
        return False
    item = record.questions[0]
    labels = [option.label for option in item.options or ()]
    return item.intent is not None and item.intent.approve in labels
