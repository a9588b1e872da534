"""The transport's own checks on an ask body: every refusal names the field, and hostile JSON never gets through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.questions.validation import (
    MAX_BODY_BYTES,
    MAX_DEPTH,
    MAX_DETAIL,
    MAX_ID,
    MAX_LABEL,
    MAX_OPTIONS,
    MAX_QUESTION,
    MAX_QUESTIONS,
    RequestRefused,
    check_ask_payload,
    parse_ask_body,
)


def question(id: str = "q1", **fields: Any) -> dict[str, Any]:
    return {"id": id, "question": "Deploy?", **fields}


def refusal(payload: Any) -> tuple[int, str, str]:
    with pytest.raises(RequestRefused) as refused:
        check_ask_payload(payload)
    return refused.value.status, refused.value.code, refused.value.message


def test_a_plain_request_passes() -> None:
    payload = {"questions": [question(options=[{"label": "Yes"}, {"label": "No"}])], "agent": {"id": "deploy-7"}}
    assert parse_ask_body(json.dumps(payload).encode()) == payload


def test_a_duplicate_question_id_is_named() -> None:
    assert refusal({"questions": [question("q1"), question("q1")]}) == (
        422,
        "BAD_REQUEST",
        'questions[1].id: duplicate id "q1" (as questions[0].id); give each question its own id',
    )


def test_option_labels_that_a_reply_cannot_tell_apart_are_refused() -> None:
    options = [{"label": "Yes"}, {"label": "No"}, {"label": " yes "}]
    assert refusal({"questions": [question(options=options)]})[2] == (
        'questions[0].options[2].label: duplicate label " yes " (as questions[0].options[0].label); '
        "give each option its own label"
    )


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        ({"questions": [question("")]}, "questions[0].id"),
        ({"questions": [question("  ")]}, "questions[0].id"),
        ({"questions": [question(question="\n\t ")]}, "questions[0].question"),
        ({"questions": [question(options=[{"label": "Yes"}, {"label": ""}])]}, "questions[0].options[1].label"),
        ({"questions": [question()], "agent": {"id": ""}}, "agent.id"),
    ],
)
def test_empty_ids_texts_and_labels_are_refused(payload: dict[str, Any], where: str) -> None:
    assert refusal(payload)[2] == f"{where}: is empty; it must have visible text"


@pytest.mark.parametrize(
    ("payload", "where", "char"),
    [
        ({"questions": [question("q\x001")]}, "questions[0].id", "0000"),
        ({"questions": [question(question="Deploy\x00?")]}, "questions[0].question", "0000"),
        ({"questions": [question(detail="ok\x1b[31m")]}, "questions[0].detail", "001B"),
        ({"questions": [question(header="a\nb")]}, "questions[0].header", "000A"),
        ({"questions": [question(options=[{"label": "Y\u0085"}])]}, "questions[0].options[0].label", "0085"),
        ({"questions": [question(question="half \ud800 a pair")]}, "questions[0].question", "D800"),
        ({"questions": [question()], "agent": {"id": "a", "labels": {"team": "x\x7f"}}}, "agent.labels.team", "007F"),
    ],
)
def test_control_characters_are_refused(payload: dict[str, Any], where: str, char: str) -> None:
    assert refusal(payload)[2].startswith(f"{where}: contains the control character U+{char}; ")


def test_tabs_and_line_breaks_are_kept_in_text_fields() -> None:
    text = "Steps:\r\n\t1. migrate\n\t2. deploy"
    check_ask_payload({"questions": [question(question=text, detail=text)]})


@pytest.mark.parametrize(
    ("field", "limit"),
    [("id", MAX_ID), ("question", MAX_QUESTION), ("detail", MAX_DETAIL)],
)
def test_each_text_field_has_a_size_limit(field: str, limit: int) -> None:
    at_limit = question(**{field: "x" * limit})
    check_ask_payload({"questions": [at_limit]})
    over = question(**{field: "x" * (limit + 1)})
    assert refusal({"questions": [over]})[2] == (
        f"questions[0].{field}: is {limit + 1:,} characters long; the limit is {limit:,}"
    )


def test_a_long_label_is_refused() -> None:
    payload = {"questions": [question(options=[{"label": "x" * (MAX_LABEL + 1)}])]}
    assert refusal(payload)[2].startswith("questions[0].options[0].label: is 201 characters long")


def test_too_many_questions_or_options_are_refused() -> None:
    many = {"questions": [question(f"q{index}") for index in range(MAX_QUESTIONS + 1)]}
    assert refusal(many)[2] == "questions: has 51 questions; the limit is 50; split them over several requests"
    options = [{"label": f"option {index}"} for index in range(MAX_OPTIONS + 1)]
    assert refusal({"questions": [question(options=options)]})[2].startswith(
        "questions[0].options: has 51 options; the limit is 50"
    )


def test_deep_nesting_is_refused_without_recursing() -> None:
    for depth in (MAX_DEPTH + 1, 100_000):
        raw = ('{"questions": [' + "[" * depth + "]" * depth + "]}").encode()
        with pytest.raises(RequestRefused) as refused:
            parse_ask_body(raw)
        assert (refused.value.status, refused.value.code) == (400, "BAD_JSON")
        assert "nests deeper than 16 levels" in refused.value.message


def test_nesting_at_the_limit_passes_and_one_level_more_is_refused_with_brackets_to_spare() -> None:
    # Brackets inside strings and side by side make the body's bracket count exceed the limit whatever its depth.
    strings = [question(f"q{index}", question="[{[{") for index in range(MAX_DEPTH)]
    junk: list[Any] = []
    for _ in range(MAX_DEPTH - 4):  # the body, its questions, the question and the junk's own list take four levels
        junk = [junk]
    at_limit = {"questions": [*strings, question("deep", junk=junk)]}
    assert parse_ask_body(json.dumps(at_limit).encode()) == at_limit
    too_deep = {"questions": [*strings, question("deep", junk=[junk])]}
    with pytest.raises(RequestRefused) as refused:
        parse_ask_body(json.dumps(too_deep).encode())
    assert (refused.value.status, refused.value.code) == (400, "BAD_JSON")


def test_an_oversize_body_is_refused_before_it_is_parsed() -> None:
    raw = b'{"questions": [], "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    with pytest.raises(RequestRefused) as refused:
        parse_ask_body(raw)
    assert (refused.value.status, refused.value.code) == (413, "TOO_LARGE")


@pytest.mark.parametrize(
    "raw",
    [b"", b"\xff\xfe", b"{", b"nul\x00", b"1" * 5000, b'{"questions": [' + b"1" * 5000 + b"]}"],
)
def test_garbage_is_bad_json_never_a_crash(raw: bytes) -> None:
    with pytest.raises(RequestRefused) as refused:
        parse_ask_body(raw)
    assert (refused.value.status, refused.value.code) == (400, "BAD_JSON")


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_any_json_value_is_accepted_or_refused_with_a_code(payload: Any) -> None:
    try:
        parse_ask_body(json.dumps(payload).encode())
    except RequestRefused as refused:
        assert refused.code in ("BAD_JSON", "BAD_REQUEST", "TOO_LARGE")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": st.text(max_size=70), "question": st.text(max_size=40)},
            optional={"options": st.lists(st.fixed_dictionaries({"label": st.text(max_size=8)}), max_size=4)},
        ),
        max_size=4,
    )
)
def test_whatever_is_accepted_can_be_shown_and_answered(questions: list[dict[str, Any]]) -> None:
    try:
        check_ask_payload({"questions": questions})
    except RequestRefused as refused:
        assert refused.code == "BAD_REQUEST"
        return
    ids = [item["id"] for item in questions]
    assert len(set(ids)) == len(ids)
    for item in questions:
        assert item["id"].strip() and item["question"].strip() and len(item["id"]) <= MAX_ID
        assert all(char >= " " or char in "\t\n\r" for char in item["question"])
        labels = [option["label"].strip().casefold() for option in item.get("options", [])]
        assert all(labels) and len(set(labels)) == len(labels)
