"""The free-text modal (Other…, Answer…, Request changes…, a plan review's "Deny…") and the notices a modal can
turn into. Pure: no I/O.

One question: a text box (plus its checkboxes or menu when it is multi-select, since words then add to the choice).
Several questions: the whole batch as a form, prefilled with the user's choices in the message, so that the modal's
Send answers everything at once and nothing has to be held on the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.channels.reject import bare, words_label
from bot.slack import ids
from bot.slack.blocks import (
    MAX_INPUT_LABEL,
    MAX_MODAL_BLOCKS,
    MAX_MODAL_BUTTON,
    MAX_MODAL_TITLE,
    MAX_PLACEHOLDER,
    MAX_SECTION_TEXT,
    MAX_TEXT_INPUT,
    Block,
    escape_clipped,
    plain,
    section,
)
from bot.slack.render import RenderError, choice_element, control_for, is_batch, option_object
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem

View = dict[str, Any]


def modal_title(question: AskUserQuestionItem) -> str:
    if question.reject_label is not None:
        return question.reject_label
    return "Request changes" if question.intent is not None else "Answer"


def rejects_alone(record: QuestionRecord) -> bool:
    """Whether the modal is a lone question's reject path ("Deny…"): its words are optional, and sending it
    without any is the reject option itself."""
    return (
        not is_batch(record) and not record.questions[0].multi_select and record.questions[0].reject_label is not None
    )


def _text_input(index: int, label: str, *, optional: bool, focus: bool, placeholder: str) -> Block:
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ids.MODAL_TEXT,
        "multiline": True,
        "max_length": MAX_TEXT_INPUT,
        "placeholder": plain(placeholder, MAX_PLACEHOLDER),
    }
    if focus:
        element["focus_on_load"] = True
    return {
        "type": "input",
        "block_id": ids.modal_text_block(index),
        "optional": optional,
        "label": plain(label, MAX_INPUT_LABEL),
        "element": element,
    }


def _choice_input(question: AskUserQuestionItem, index: int, chosen: Sequence[int]) -> Block:
    control = control_for(question, batch=True)
    element = choice_element(question, index, ids.MODAL_CHOICE, control)
    count = len(question.options or ())
    initial = [option_object(question, o) for o in dict.fromkeys(chosen) if 0 <= o < count]
    if initial and question.multi_select:
        element["initial_options"] = initial
    elif initial:
        element["initial_option"] = initial[0]
    label = "Choose any" if question.multi_select else "Choose one"
    return {
        "type": "input",
        "block_id": ids.modal_choice_block(index),
        "optional": True,
        "label": plain(label, MAX_INPUT_LABEL),
        "element": element,
    }


def _asked(question: AskUserQuestionItem, index: int, *, batch: bool) -> Block:
    title = " ".join((question.header or "").split())
    prefix = (
        f"*{index + 1}. {escape_clipped(title, 150)}*\n" if batch and title else f"*{index + 1}.* " if batch else ""
    )
    return section(prefix + escape_clipped(question.question.strip() or "(no question text)", MAX_SECTION_TEXT - 200))


def render_answer_modal(
    record: QuestionRecord, focus: int, ref: ids.ModalRef, *, chosen: Mapping[int, Sequence[int]] | None = None
) -> View:
    """The modal opened from question `focus`'s text button; `chosen` prefills choices made in the message.

    Raises RenderError when the questions cannot be shown (see `render_question`).
    """
    chosen = chosen or {}
    batch = is_batch(record)
    blocks: list[Block] = []
    for index, question in enumerate(record.questions):
        blocks.append(_asked(question, index, batch=batch))
        here = index == focus
        if not batch and not question.multi_select and question.reject_label is not None:
            label, placeholder = words_label(question.reject_label), "Your reason, which the agent reads"
            blocks.append(_text_input(index, label, optional=True, focus=True, placeholder=placeholder))
            continue
        if not batch and not question.multi_select:
            label = "What should change?" if question.intent is not None else "Your answer"
            blocks.append(_text_input(index, label, optional=False, focus=True, placeholder="Write your answer"))
            continue
        if question.options:
            blocks.append(_choice_input(question, index, chosen.get(index, ())))
        label = "Or in your own words" if question.options else "Your answer"
        if question.intent is not None:
            label = words_label(question.reject_label) if question.reject_label else "What should change?"
        blocks.append(_text_input(index, label, optional=True, focus=here, placeholder="Optional"))
    if len(blocks) > MAX_MODAL_BLOCKS:
        raise RenderError(f"{len(record.questions)} questions do not fit in one Slack modal")
    return {
        "type": "modal",
        "callback_id": ids.MODAL_CALLBACK,
        "private_metadata": ref.dump(),
        "title": plain(modal_title(record.questions[focus]), MAX_MODAL_TITLE),
        "submit": plain(
            bare(record.questions[0].reject_label or "") if rejects_alone(record) else "Send", MAX_MODAL_BUTTON
        ),
        "close": plain("Cancel", MAX_MODAL_BUTTON),
        "blocks": blocks,
    }


def render_notice_view(title: str, text: str) -> View:
    """A modal that only says something (mrkdwn `text`, already escaped): what a closed question's modal becomes."""
    return {
        "type": "modal",
        "title": plain(title, MAX_MODAL_TITLE),
        "close": plain("Close", MAX_MODAL_BUTTON),
        "blocks": [section(text)],
    }
