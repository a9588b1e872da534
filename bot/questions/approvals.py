"""k-of-n approvals: which questions take several approvals, what counts as one, and how progress reads.

A route with `approvals = k` needs k different responders to approve a plan review (or a lone question with an
Approve option) before the agent hears "approved"; any other answer from one of them (request changes, reject, free
text) ends the question at once with that answer: one veto is enough. Pure functions; the ledger keeps the count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bot.store.records import Approval, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

RECOMMENDED = "(recommended)"


def approve_label(question: AskUserQuestionItem) -> str | None:
    """The option that approves `question`: its plan-review intent's, else an option called Approve (or Approved)."""
    if question.intent is not None:
        return question.intent.approve
    for option in question.options or ():
        if option.label.casefold().replace(RECOMMENDED, "").strip() in ("approve", "approved"):
            return option.label
    return None


def approval_item(
    record: QuestionRecord, items: Mapping[str, AskUserQuestionAnswerItem]
) -> AskUserQuestionAnswerItem | None:
    """The item when `items` approves `record` (one question, its approve option alone, no words); else None."""
    if len(record.questions) != 1:
        return None
    question = record.questions[0]
    item = items.get(question.id)
    label = approve_label(question)
    if item is None or label is None or item.selected != [label] or (item.custom or "").strip():
        return None
    return item


def progress(record: QuestionRecord, needed: int, name: Callable[[Approval], str] = lambda a: a.by) -> str:
    """How far a question that needs `needed` approvals has come: "1 of 2 approvals: Alice"."""
    names = ", ".join(name(approval) for approval in record.approvals)
    return f"{len(record.approvals)} of {needed} approvals" + (f": {names}" if names else "")


def approvers(record: QuestionRecord) -> str:
    """Everyone who approved, for `answered_by` once the last approval completes the question."""
    return ", ".join(approval.by for approval in record.approvals)
