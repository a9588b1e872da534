"""Turn a submitted inbox form into answer items: a pure parser, so every shape is testable without a server.

Field names use the question's position, never its id or option labels: `q{i}` carries the chosen option indices
(or `other`), `q{i}.other` the free text, `action` the button pressed (`send`, `skip`), `by` who is answering. Indices
keep agent text out of field names and make a label like "other" impossible to confuse with the free-text choice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.channels.reject import reject_item
from bot.channels.replies import is_allowed
from bot.errors import HandraiseError
from bot.web.errors import WebErrorCode
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

OTHER = "other"
"""The choice value meaning "my own words" (the Other field; Request changes for a plan review)."""

SKIP = "skip"
MAX_TEXT = 10_000
"""Characters allowed in one free-text answer: a plan critique fits; a pasted log should go elsewhere."""
CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters other than tab and line breaks (the HTTP API refuses the same in questions)."""

FormData = Mapping[str, Sequence[str]]


class FormError(HandraiseError, ValueError):
    """The form cannot become an answer as submitted. The message is for the person answering and says what to do."""

    code = WebErrorCode.BAD_FORM


class NotAResponder(FormError):
    """The person answering is not one the config lets answer this question; `name` is who they said they are."""

    code = WebErrorCode.NOT_A_RESPONDER

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


def choice_field(index: int) -> str:
    return f"q{index}"


def other_field(index: int) -> str:
    return f"q{index}.other"


def first(form: FormData, name: str) -> str | None:
    values = form.get(name) or ()
    return values[0] if values else None


def parse_answer_form(questions: Sequence[AskUserQuestionItem], form: FormData) -> dict[str, AskUserQuestionAnswerItem]:
    """The answer items a form submits, by question id; a question left blank is skipped.

    The Skip button skips every question. Raises FormError for a form that says two things at once (an option and
    different free text on a single-choice question), an empty Other, or nothing chosen anywhere.
    """
    if first(form, "action") == SKIP:
        return {question.id: AskUserQuestionAnswerItem(id=question.id) for question in questions}
    items = {question.id: _parse_item(index, question, form) for index, question in enumerate(questions)}
    if all(not item.selected and item.custom is None for item in items.values()):
        raise FormError("Nothing was chosen: pick an answer or write one, or press Skip to answer without one.")
    return items


def _parse_item(index: int, question: AskUserQuestionItem, form: FormData) -> AskUserQuestionAnswerItem:
    labels = [option.label for option in question.options or ()]
    text = (first(form, other_field(index)) or "").strip()
    if len(text) > MAX_TEXT:
        raise FormError(f"{_name(question)}: the text is {len(text)} characters; keep it under {MAX_TEXT}.")
    if (control := CONTROL_IN_TEXT.search(text)) is not None:
        # No browser sends these from a text box; the agent, Slack and email should not receive them either.
        raise FormError(f"{_name(question)}: the text holds the control character U+{ord(control[0]):04X}; remove it.")
    selected: list[str] = []
    wants_text = False
    for choice in form.get(choice_field(index)) or ():
        if choice == OTHER:
            wants_text = True
        elif choice.isdecimal() and int(choice) < len(labels):
            if labels[int(choice)] not in selected:
                selected.append(labels[int(choice)])
        else:
            raise FormError(f"{_name(question)}: that choice is not one of its options; reload the page.")
    plan_review = question.intent is not None
    reject = question.reject_label if not question.multi_select else None
    if wants_text and reject is not None and not selected:
        return reject_item(question, reject, text)  # "Deny…" with the reason typed, or a plain deny without one
    if wants_text and not text:
        what = "say what should change" if plan_review else "write your answer in Other"
        raise FormError(f"{_name(question)}: {what}, or pick one of the options.")
    if question.multi_select:
        return AskUserQuestionAnswerItem(id=question.id, selected=selected, custom=text or None)
    if len(selected) + wants_text > 1:
        raise FormError(f"{_name(question)}: takes one choice; pick just one.")
    if selected and text:
        # Which did they mean? Sending either could be wrong, and approving a plan with objections typed is worse.
        if plan_review:
            raise FormError(
                f"{_name(question)}: you wrote changes but chose {selected[0]}; clear the text to choose "
                f"{selected[0]}, or press {reject or 'Request changes'}."
            )
        raise FormError(f"{_name(question)}: you chose {selected[0]} and also wrote an answer; keep just one.")
    return AskUserQuestionAnswerItem(id=question.id, selected=selected, custom=text or None)


def _name(question: AskUserQuestionItem) -> str:
    return f"“{question.header or question.question}”"


def parse_responder(form: FormData, responders: Sequence[str]) -> str | None:
    """Who is answering, when `responders` limits who may; None when anyone with the inbox link may answer.

    An entry matches a name or address exactly (ignoring case); an entry `@example.org` matches any address at that
    domain. Raises FormError when the field is empty, NotAResponder when it names someone not listed.
    """
    if not responders:
        return None
    name = (first(form, "by") or "").strip()
    if not name:
        raise FormError("Say who is answering: fill in “Answering as” with your name or email.")
    if not is_allowed(name, responders):
        raise NotAResponder(not_a_responder(name), name)
    return name


def not_a_responder(name: str) -> str:
    """What someone the config does not let answer is told."""
    return (
        f"“{name}” may not answer this question: only the responders in the handraise config may; "
        "ask whoever runs it to add you."
    )
