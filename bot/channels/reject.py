"""A plan review's reject option (`intent.reject`, e.g. "Deny…"): the option that asks for the person's words.

Every channel shows it as its own free-text path in place of "Request changes…", and reads what comes back the same
way: words given are the answer's `custom` (a deny with the person's reason), none is that option alone in `selected`
(a plain deny). Replies in words ("Deny", "Deny: too risky") are read here too, so email, Slack threads and Telegram
agree on what they mean. Pure.
"""

from __future__ import annotations

import re

from core import AskUserQuestionAnswerItem, AskUserQuestionItem

_TRAILING = re.compile(r"(?:\s*(?:…|\.\.\.))+\s*$")
_SEPARATOR = re.compile(r"\s*(?:[:\uff1a,;\u2014\u2013-]|\n)\s*")  # colon, full-width colon, dashes


def bare(label: str) -> str:
    """The label as a word to type: "Deny…" → "Deny" (the ellipsis only says that words may follow)."""
    return _TRAILING.sub("", label).strip() or label.strip()


def words_label(reject: str) -> str:
    """What the free-text field is called: "Deny… — say why (optional)"."""
    return f"{reject} — say why (optional)"


def reject_item(question: AskUserQuestionItem, reject: str, words: str | None) -> AskUserQuestionAnswerItem:
    """The answer given through the reject path: the words as `custom`, or with none the reject option alone."""
    words = (words or "").strip()
    if words:
        return AskUserQuestionAnswerItem(id=question.id, custom=words)
    return AskUserQuestionAnswerItem(id=question.id, selected=[reject])


def read_reject_reply(question: AskUserQuestionItem, text: str) -> AskUserQuestionAnswerItem | None:
    """A reply that uses the reject option by name: "Deny" (or "Deny…") alone is a plain deny; "Deny: because…",
    "Deny - because…" or "Deny" with the reason on the next lines gives the reason. None for any other reply."""
    reject = question.reject_label
    if reject is None:
        return None
    text = text.strip()
    word = bare(reject)
    if text[: len(word)].casefold() != word.casefold():
        return None
    rest = re.sub(r"^(?:…|\.\.\.)", "", text[len(word) :])  # "Deny…: because" as well as "Deny: because"
    if not rest.strip(" .!"):
        return reject_item(question, reject, None)
    separated = _SEPARATOR.match(rest)
    if separated is None:
        return None  # "Denying is fine" is not the word Deny followed by a reason
    return reject_item(question, reject, rest[separated.end() :])
