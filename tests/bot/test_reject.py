"""A plan review's reject option read alike in every channel: its word alone, its word and a reason, anything else
left to the channel. Hostile and odd replies never raise and never turn into an approval."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.channels.reject import bare, read_reject_reply, reject_item, words_label
from core import AskUserQuestionItem


def prompt(reject: str | None = "Deny…", approve: str = "Allow", other: str = "Always allow") -> AskUserQuestionItem:
    options = [{"label": approve}, {"label": reject or "Deny"}, {"label": other}]
    intent = {"kind": "plan-review", "approve": approve} | ({"reject": reject} if reject else {})
    return AskUserQuestionItem.model_validate(
        {"id": "p", "question": "Allow Bash?", "detail": "ls", "options": options, "intent": intent}
    )


@pytest.mark.parametrize(
    ("label", "word"),
    [
        ("Deny…", "Deny"),
        ("Deny...", "Deny"),
        ("Deny", "Deny"),
        ("Revise … ", "Revise"),
        ("…", "…"),
        ("No (…)", "No (…)"),
    ],
)
def test_the_word_to_type_is_the_label_without_its_ellipsis(label: str, word: str) -> None:
    assert bare(label) == word


def test_the_field_says_the_words_are_optional() -> None:
    assert words_label("Deny…") == "Deny… — say why (optional)"


@pytest.mark.parametrize(
    ("text", "selected", "custom"),
    [
        ("Deny", ["Deny…"], None),
        ("  deny.  ", ["Deny…"], None),
        ("DENY!", ["Deny…"], None),
        ("Deny…", ["Deny…"], None),
        ("Deny...", ["Deny…"], None),
        ("Deny:", ["Deny…"], None),
        ("Deny: \n ", ["Deny…"], None),
        ("Deny: not on a Friday", [], "not on a Friday"),
        ("deny - cache is shared", [], "cache is shared"),
        ("Deny — ask Bob", [], "ask Bob"),
        ("Deny… : too wide", [], "too wide"),
        ("Deny\n\nthe tests fail\non main", [], "the tests fail\non main"),
        ("Deny\uff1a\u5168\u89d2", [], "\u5168\u89d2"),  # a full-width colon
    ],
)
def test_the_word_alone_or_with_a_reason(text: str, selected: list[str], custom: str | None) -> None:
    item = read_reject_reply(prompt(), text)
    assert item is not None and (item.selected, item.custom) == (selected, custom)


@pytest.mark.parametrize("text", ["Denying is fine", "Denial", "Allow", "deny it", "", "D", "1", "please deny: x"])
def test_anything_else_is_left_to_the_channel(text: str) -> None:
    assert read_reject_reply(prompt(), text) is None


def test_without_a_reject_option_nothing_is_read_here() -> None:
    assert read_reject_reply(prompt(reject=None), "Deny: x") is None


def test_a_label_with_pattern_characters_is_matched_as_text() -> None:
    question = prompt(reject="No (.*)…")
    assert read_reject_reply(question, "No (.*): why") is not None
    assert read_reject_reply(question, "No way: why") is None


def test_the_reject_path_gives_words_or_the_option() -> None:
    assert reject_item(prompt(), "Deny…", "  why \n").custom == "why"
    assert reject_item(prompt(), "Deny…", "   ").selected == ["Deny…"]
    assert reject_item(prompt(), "Deny…", None).selected == ["Deny…"]


@given(st.text(max_size=300))
def test_no_reply_raises_or_approves(text: str) -> None:
    item = read_reject_reply(prompt(), text)
    if item is not None:
        assert item.selected in ([], ["Deny…"]) and "Allow" not in item.selected
        assert item.selected == ["Deny…"] or (item.custom or "").strip()


def test_a_huge_reply_is_read_in_one_pass() -> None:
    item = read_reject_reply(prompt(), "Deny: " + "x" * 1_000_000)
    assert item is not None and len(item.custom or "") == 1_000_000
