"""The reply grammar: the new text of a reply becomes answer items, or problems to explain to the person.

One question open:
- an option by number (`2`, `2.`, `#2`, `option 2`) or by label (any case, "(Recommended)" optional, or the start
  of exactly one label);
- multi-select: several of those, separated by commas, semicolons, "and", "&", spaces (numbers) or new lines, or
  written as a list (`-`, `*`, `•` bullets, or `1.`/`1)` numbering in front of labels); lines that are not options
  are the free-text `custom` answer that goes with them, except a lead-in line before a list ("My picks:");
- plan-review: `approve` / `approved` (any case) is the approve label; other text asks for changes (`custom`); with a
  reject option ("Deny…"), its word alone ("Deny") is that option and "Deny: because…" gives the reason as `custom`;
- `skip` skips the question; any other text is the free-text answer.

Several questions open: lines `N: answer`, `N. answer` or `N) answer` (N is the question's number in the mail), each
read as above; following lines without a number continue the answer above them.
"""

# ruff: noqa: RUF001 (the patterns are in many languages and scripts on purpose)

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from bot.channels.reject import read_reject_reply
from bot.channels.replies import ReplyError
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption

_OPTION_NUMBER = re.compile(r"(?:#|(?:option|opt\.?|choice|no\.?|nr\.?|number)\s*#?)?\s*(\d{1,6})\s*[.):]?", re.I)
_QUESTION_LINE = re.compile(r"^\s*(?:q(?:uestion)?\s*)?#?(\d{1,4})\s*[:.)]\s*(.*)$", re.IGNORECASE)
_RECOMMENDED = re.compile(r"\(\s*recommended\s*\)", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•+·‣◦]|\[[xX ]?\])\s+")
_LIST_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+(?=\D)")
_LEAD_IN = re.compile(r"[:：]\s*$")
_LIST_SEPARATORS = re.compile(r"\s*(?:[,;/&+]|\band\b|\bund\b|\bet\b|\by\b)\s*", re.IGNORECASE)
_APPROVE = frozenset({"approve", "approved", "i approve", "approve it", "lgtm"})
_SKIP = frozenset({"skip", "skipped", "pass", "-"})
_PREFIX_MINIMUM = 3
_NUMBERED_LABEL = re.compile(r"(?:#|option\s*)?(\d{1,6})\s*[.):\-]?\s+(.+)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class ParsedReply:
    """What a reply said: answer items by question id, and the problems to tell the person about."""

    items: dict[str, AskUserQuestionAnswerItem] = field(default_factory=dict[str, AskUserQuestionAnswerItem])
    problems: list[str] = field(default_factory=list[str])


def parse_reply(text: str, questions: Sequence[AskUserQuestionItem], *, answered: Collection[str] = ()) -> ParsedReply:
    """Read the new text of a reply against `questions`; `answered` are ids that already have an answer.

    Never raises: what cannot be read comes back in `problems`, in words for the person who wrote it.
    """
    text = text.strip()
    numbered = list(enumerate(questions, start=1))
    open_ = [(n, q) for n, q in numbered if q.id not in answered]
    if not text:
        return ParsedReply(problems=["the reply has no text of its own (only quoted mail, or nothing at all)"])
    if len(questions) == 1 or (len(open_) == 1 and not _has_numbered_lines(text, len(questions))):
        number, question = open_[0] if open_ else numbered[0]
        text = _strip_own_number(text, number)
        return _single(question, text, None)
    sections, problems = _sections(text, len(questions))
    if not sections:
        example = ", ".join(f'"{n}: ..."' for n, _ in open_[:2])
        return ParsedReply(
            problems=[
                f"this mail asks {len(questions)} questions, so start each answer with its question's number "
                f"(e.g. {example})"
            ]
        )
    items: dict[str, AskUserQuestionAnswerItem] = {}
    for number, answer in sections:
        question = questions[number - 1]
        parsed = _single(question, answer, number)
        items.update(parsed.items)
        problems.extend(parsed.problems)
    return ParsedReply(items, problems)


def _single(question: AskUserQuestionItem, text: str, number: int | None) -> ParsedReply:
    where = f"question {number}: " if number is not None else ""
    try:
        item = read_answer(question, text)
    except ReplyError as problem:
        return ParsedReply(problems=[f"{where}{problem}"])
    return ParsedReply({question.id: item})


def read_answer(question: AskUserQuestionItem, text: str) -> AskUserQuestionAnswerItem:
    """One question's answer from its text. Raises ReplyError (a ValueError) naming what is wrong."""
    text = text.strip()
    key = _key(text)
    if not text:
        raise ReplyError("the answer is empty")
    if key in _SKIP:
        return AskUserQuestionAnswerItem(id=question.id, selected=[])
    if (rejected := read_reject_reply(question, text)) is not None:
        return rejected  # "Deny" alone, or "Deny: because…" (a plan review's reject option)
    options = list(question.options or ())
    intent = question.intent
    if intent is not None and intent.kind == "plan-review" and key.rstrip(".!") in _APPROVE:
        return AskUserQuestionAnswerItem(id=question.id, selected=[intent.approve])
    if not options:
        return AskUserQuestionAnswerItem(id=question.id, custom=text)
    if question.multi_select:
        return _multi(question, options, text)
    choice = _choice(options, text)
    if choice is None:
        listed = _without_lead_in(options, [line for line in text.splitlines() if line.strip()])
        if len(listed) == 1 and listed[0].strip() != text:
            choice = _choice(options, _LIST_NUMBER.sub("", listed[0]))
    if choice is not None:
        return AskUserQuestionAnswerItem(id=question.id, selected=[choice])
    return AskUserQuestionAnswerItem(id=question.id, custom=text)


def _multi(question: AskUserQuestionItem, options: list[AskUserQuestionOption], text: str) -> AskUserQuestionAnswerItem:
    selected: list[str] = []
    custom: list[str] = []
    lines = _without_lead_in(options, [line for line in text.splitlines() if line.strip()])
    for line in lines:
        picks = _line_choices(options, line)
        if picks is None:
            custom.append(line.strip())
        else:
            selected.extend(pick for pick in picks if pick not in selected)
    return AskUserQuestionAnswerItem(id=question.id, selected=selected, custom="\n".join(custom) or None)


def _line_choices(options: list[AskUserQuestionOption], line: str) -> list[str] | None:
    """The options one line names, as a plain line, a bulleted item or an item numbered by the person's own list."""
    picks = _choices(options, _BULLET.sub("", line))
    if picks is None and _LIST_NUMBER.match(line):
        picks = _choices(options, _LIST_NUMBER.sub("", line))
    return picks


def _without_lead_in(options: list[AskUserQuestionOption], lines: list[str]) -> list[str]:
    """Drop an introduction before a list of options ("My picks:", or any line above a bulleted list of options):
    it is not an answer of its own."""
    if len(lines) < 2 or _line_choices(options, lines[0]) is not None:
        return lines
    rest = lines[1:]
    listed = all(_BULLET.match(line) or _LIST_NUMBER.match(line) for line in rest)
    if not (_LEAD_IN.search(lines[0]) or listed):
        return lines
    return rest if all(_line_choices(options, line) is not None for line in rest) else lines


def _choices(options: list[AskUserQuestionOption], line: str) -> list[str] | None:
    """Every option a line names, or None when the line is not (only) a list of options."""
    whole = _choice(options, line)
    if whole is not None:
        return [whole]
    parts = [part for part in _LIST_SEPARATORS.split(line) if part.strip()]
    if len(parts) == 1:
        parts = line.split()
        if not all(_OPTION_NUMBER.fullmatch(part) for part in parts):
            return None
    picks: list[str] = []
    for part in parts:
        pick = _choice(options, part)
        if pick is None:
            return None
        picks.append(pick)
    return picks


def _choice(options: list[AskUserQuestionOption], text: str) -> str | None:
    """The option `text` names, by number or label; None when it names none. Raises ReplyError when it names an
    option that does not exist or more than one."""
    labels = [option.label for option in options]
    text = _BULLET.sub("", text).strip()
    number = _OPTION_NUMBER.fullmatch(text)
    if number is not None:
        index = int(number[1])
        if not 1 <= index <= len(labels):
            raise ReplyError(f"there is no option {index}; the options are numbered 1 to {len(labels)}")
        return labels[index - 1]
    key = _label_key(text)
    if not key:
        return None
    if (copied := _copied_option(options, text)) is not None:
        return copied
    exact = [label for label in labels if _label_key(label) == key]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        raise ReplyError(f'"{text}" matches more than one option; answer with its number instead')
    if len(key) < _PREFIX_MINIMUM:
        return None
    starting = [label for label in labels if re.match(re.escape(key) + r"\b", _label_key(label))]
    if len(starting) == 1:
        return starting[0]
    if len(starting) > 1:
        names = ", ".join(f'"{label}"' for label in starting)
        raise ReplyError(f'"{text}" could be any of {names}; answer with the option\'s number instead')
    return None


def _copied_option(options: Sequence[AskUserQuestionOption], text: str) -> str | None:
    """An option line copied from the mail: "2. SQLite" (number and label), or label and description."""
    numbered = _NUMBERED_LABEL.fullmatch(text)
    if numbered is not None and 1 <= int(numbered[1]) <= len(options):
        option = options[int(numbered[1]) - 1]
        if _label_key(numbered[2]) in _shown_keys(option):
            return option.label
    key = _label_key(text)
    copied = [option.label for option in options if key in _shown_keys(option)]
    return copied[0] if len(copied) == 1 else None


def _shown_keys(option: AskUserQuestionOption) -> set[str]:
    """How an option reads when copied from the mail: its label, alone or followed by its description."""
    label = _label_key(option.label)
    if not option.description:
        return {label}
    description = _label_key(option.description)
    return {label, *(f"{label}{separator}{description}" for separator in (" - ", " — ", " – ", ": ", " "))}


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _label_key(text: str) -> str:
    return _key(_RECOMMENDED.sub(" ", text)).strip(" .!\"'“”‘’")


def _strip_own_number(text: str, number: int) -> str:
    """A one-question reply written as "1: Postgres" (the question's own number) is the answer "Postgres"."""
    found = _QUESTION_LINE.match(text)
    if found and int(found[1]) == number and "\n" not in text.strip() and found[2].strip():
        separator = text.strip()[len(found[1]) :].lstrip()[:1]
        if separator == ":":
            return found[2]
    return text


def _has_numbered_lines(text: str, count: int) -> bool:
    return any((m := _QUESTION_LINE.match(line)) and m[2].strip() and int(m[1]) <= count for line in text.splitlines())


def _sections(text: str, count: int) -> tuple[list[tuple[int, str]], list[str]]:
    """Split `N: answer` lines (with continuation lines) into (question number, answer text)."""
    sections: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        found = _QUESTION_LINE.match(line)
        if found and found[2].strip():
            number = int(found[1])
            if not 1 <= number <= count:
                problems.append(f"there is no question {number}; the questions are numbered 1 to {count}")
                current = None
                continue
            current = [found[2]]
            sections.append((number, current))
        elif current is not None:
            current.append(line)
    merged: dict[int, str] = {}
    for number, body in sections:
        if number in merged:
            problems.append(f"question {number} is answered twice; the first answer was used")
            continue
        merged[number] = "\n".join(body).strip()
    return list(merged.items()), problems
