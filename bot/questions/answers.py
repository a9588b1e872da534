"""Check a human's answer against the questions it answers, so every channel hands the agent the same shapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.errors import BotErrorCode, HandraiseError
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem


class AnswerError(HandraiseError, ValueError):
    """The answer does not fit its questions. The message is for the person answering."""

    code = BotErrorCode.BAD_ANSWER


def normalise_item(question: AskUserQuestionItem, item: AskUserQuestionAnswerItem) -> AskUserQuestionAnswerItem:
    """Return `item` in the design's shape for `question`; raises AnswerError naming what does not fit.

    Single-select: one label at most, and free text overrides it (`selected` empty). Multi-select: labels and free
    text may go together. Labels must be the question's own; blank free text counts as none.
    """
    labels = [option.label for option in question.options or ()]
    custom = item.custom.strip() if item.custom is not None else None
    custom = custom or None
    selected: list[str] = []
    for label in item.selected:
        if label not in labels:
            raise AnswerError(f'question {question.id}: "{label}" is not one of its options')
        if label not in selected:
            selected.append(label)
    if not question.multi_select:
        if custom is not None:
            selected = []
        elif len(selected) > 1:
            raise AnswerError(f"question {question.id} takes one choice, not {len(selected)}")
    if item.id == question.id and item.selected == selected and item.custom == custom:
        return item  # already in shape (a form or a click reads it so): the same frozen item, not a copy
    return AskUserQuestionAnswerItem(id=question.id, selected=selected, custom=custom)


def normalise_answer(
    questions: Sequence[AskUserQuestionItem], items: Mapping[str, AskUserQuestionAnswerItem]
) -> AskUserQuestionAnswer:
    """Build the whole answer in question order; a question with no item is answered as skipped.

    Raises AnswerError for an item whose id names no question.
    """
    known = {question.id for question in questions}
    for answer_id in items:
        if answer_id not in known:
            raise AnswerError(f"there is no question {answer_id}")
    return AskUserQuestionAnswer(
        answers=[
            normalise_item(question, items.get(question.id) or AskUserQuestionAnswerItem(id=question.id))
            for question in questions
        ]
    )
