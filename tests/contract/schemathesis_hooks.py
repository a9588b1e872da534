"""Schemathesis hooks for the contract tests (loaded through SCHEMATHESIS_HOOKS).

JSON Schema cannot say everything the server checks; the OpenAPI document says the rest in words, and these hooks
keep the generated *valid* requests within it, so that a refusal of one of them is a real disagreement:
- question ids unique in a request, option labels unique ignoring case and surrounding spaces;
- a plan review's `intent.approve` naming one of the options, with the plan in `detail`;
- texts (question, detail, description, request, a note's text) without control characters but tabs and line
  breaks, and not blank where the document says so (it says it in words for texts, in patterns for lines).
The same rules drop a 422 for such a body in the phases that build requests from the schema alone
(`filter_failure`): refusing it is the server keeping the document's word. And long polls stay short: a `wait` of
minutes on a pending question is the server keeping its word, but not worth minutes of the test suite.
"""

from __future__ import annotations

import re
from typing import Any

import schemathesis

LONGEST_WAIT = 0.2
CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
NOT_BLANK = frozenset({"question", "request", "detail"})
"""Texts that must hold visible text (`detail` only in a permission; a question's may be blank, but a plan's not)."""


def _texts_fit(value: Any, key: str = "") -> bool:
    if isinstance(value, str):
        return not CONTROL_IN_TEXT.search(value) and (key not in NOT_BLANK or bool(value.strip()) or key == "detail")
    if isinstance(value, dict):
        return all(_texts_fit(item, str(name)) for name, item in value.items())
    if isinstance(value, list):
        return all(_texts_fit(item, key) for item in value)
    return True


def _permission_fits(body: dict[str, Any]) -> bool:
    permission = body.get("permission")
    if not isinstance(permission, dict):
        return True
    return all(not isinstance(permission.get(key), str) or permission[key].strip() for key in ("request", "detail"))


def _said_in_words(body: dict[str, Any]) -> bool:
    questions = body.get("questions")
    if not isinstance(questions, list):
        return True
    ids = [item.get("id") for item in questions if isinstance(item, dict)]
    if len(ids) != len(set(map(str, ids))):
        return False
    for item in questions:
        if not isinstance(item, dict):
            continue
        options = item.get("options")
        if not isinstance(options, list):
            options = []
        labels = [str(option.get("label", "")).strip().casefold() for option in options if isinstance(option, dict)]
        if len(labels) != len(set(labels)):
            return False
        intent = item.get("intent")
        if isinstance(intent, dict):
            raw_labels = [option.get("label") for option in options if isinstance(option, dict)]
            detail = item.get("detail")
            if intent.get("approve") not in raw_labels or not isinstance(detail, str) or not detail.strip():
                return False
    return True


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    """Drop generated bodies that break the rules the document states in words (valid bodies only: a body that
    breaks the schema anyway is refused whatever it holds)."""
    if not isinstance(body, dict):
        return True
    return _said_in_words(body) and _texts_fit(body) and _permission_fits(body)


@schemathesis.hook
def map_query(context: Any, query: Any) -> Any:
    """Keep long polls short (a number in range stays a number in range)."""
    wait = query.get("wait") if isinstance(query, dict) else None
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 <= wait <= 300:
        query["wait"] = min(query["wait"], LONGEST_WAIT)
    return query


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a 422 for a body that breaks a rule the document states in words."""
    body = case.body
    if response.status_code != 422 or not isinstance(body, dict):
        return True
    return _said_in_words(body) and _texts_fit(body) and _permission_fits(body)
