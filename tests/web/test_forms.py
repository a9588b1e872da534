"""The answer form's fields become the design's answer shapes, and an ambiguous form is refused, not guessed."""

from __future__ import annotations

import pytest

from bot.web.forms import MAX_TEXT, FormError, NotAResponder, parse_answer_form, parse_responder
from core import AskUserQuestionAnswerItem, AskUserQuestionItem
from tests.web.helpers import choice, item, options, plan


def test_single_choice_selects_the_option_at_that_index() -> None:
    items = parse_answer_form([choice()], {"q0": ["1"], "q0.other": [""], "action": ["send"]})
    assert items == {"env": AskUserQuestionAnswerItem(id="env", selected=["production"])}


def test_single_choice_other_gives_custom_with_nothing_selected() -> None:
    items = parse_answer_form([choice()], {"q0": ["other"], "q0.other": ["  canary  "]})
    assert items["env"] == AskUserQuestionAnswerItem(id="env", selected=[], custom="canary")


def test_text_typed_without_ticking_other_still_counts_as_custom() -> None:
    assert parse_answer_form([choice()], {"q0.other": ["canary"]})["env"].custom == "canary"


def test_single_choice_with_an_option_and_different_text_is_refused() -> None:
    with pytest.raises(FormError, match="you chose staging and also wrote an answer"):
        parse_answer_form([choice()], {"q0": ["0"], "q0.other": ["canary"]})


def test_other_ticked_but_empty_is_refused() -> None:
    with pytest.raises(FormError, match="write your answer in Other"):
        parse_answer_form([choice()], {"q0": ["other"], "q0.other": ["   "]})


def test_multi_select_keeps_every_ticked_option_in_option_order_and_the_text() -> None:
    question = item("tags", multi_select=True, options=options("a", "b", "c"))
    items = parse_answer_form([question], {"q0": ["2", "0", "other"], "q0.other": ["d"]})
    assert items["tags"] == AskUserQuestionAnswerItem(id="tags", selected=["c", "a"], custom="d")


def test_multi_select_with_text_but_no_box_adds_the_text() -> None:
    question = item("tags", multi_select=True, options=options("a", "b"))
    items = parse_answer_form([question], {"q0": ["1"], "q0.other": ["more"]})
    assert items["tags"] == AskUserQuestionAnswerItem(id="tags", selected=["b"], custom="more")


def test_question_without_options_takes_free_text() -> None:
    assert parse_answer_form([item("why")], {"q0.other": ["because"]})["why"].custom == "because"


def test_skip_button_skips_every_question_whatever_was_typed() -> None:
    items = parse_answer_form([choice(), item("why")], {"action": ["skip"], "q0": ["1"], "q1.other": ["x"]})
    assert items == {"env": AskUserQuestionAnswerItem(id="env"), "why": AskUserQuestionAnswerItem(id="why")}


def test_sending_a_blank_form_is_refused_rather_than_skipping_by_accident() -> None:
    with pytest.raises(FormError, match="Nothing was chosen"):
        parse_answer_form([choice(), item("why")], {"action": ["send"], "q1.other": [" "]})


def test_several_questions_blank_ones_are_skipped() -> None:
    questions = [choice(), choice("regions", multi=True), item("why")]
    items = parse_answer_form(questions, {"q0": ["0"], "q1.other": [""], "q2.other": ["tests pass"]})
    assert items == {
        "env": AskUserQuestionAnswerItem(id="env", selected=["staging"]),
        "regions": AskUserQuestionAnswerItem(id="regions"),
        "why": AskUserQuestionAnswerItem(id="why", custom="tests pass"),
    }


def test_plan_review_approve_button_selects_the_approve_label() -> None:
    items = parse_answer_form([plan()], {"q0": ["0"], "q0.other": [""]})
    assert items["plan"] == AskUserQuestionAnswerItem(id="plan", selected=["Approve"])


def test_plan_review_request_changes_gives_the_changes_as_custom() -> None:
    items = parse_answer_form([plan()], {"q0": ["other"], "q0.other": ["Backfill at night"]})
    assert items["plan"] == AskUserQuestionAnswerItem(id="plan", custom="Backfill at night")


def test_plan_review_request_changes_without_text_is_refused() -> None:
    with pytest.raises(FormError, match="say what should change"):
        parse_answer_form([plan()], {"q0": ["other"], "q0.other": [""]})


def test_approving_with_changes_typed_is_refused_not_approved() -> None:
    with pytest.raises(FormError, match="you wrote changes but chose Approve"):
        parse_answer_form([plan()], {"q0": ["0"], "q0.other": ["wait, batch size?"]})


@pytest.mark.parametrize("value", ["2", "-1", "staging", "1.0", ""])
def test_a_choice_that_is_not_an_option_index_is_refused(value: str) -> None:
    with pytest.raises(FormError, match="not one of its options"):
        parse_answer_form([choice()], {"q0": [value]})


def test_two_choices_on_a_single_choice_question_are_refused() -> None:
    with pytest.raises(FormError, match="takes one choice"):
        parse_answer_form([choice()], {"q0": ["0", "1"]})


def test_overlong_text_is_refused() -> None:
    with pytest.raises(FormError, match=f"under {MAX_TEXT}"):
        parse_answer_form([item("why")], {"q0.other": ["x" * (MAX_TEXT + 1)]})


@pytest.mark.parametrize("text", ["a\x00b", "bell\x07", "esc\x1b[31m"], ids=["NUL", "BEL", "ESC"])
def test_text_with_control_characters_is_refused(text: str) -> None:
    with pytest.raises(FormError, match="control character"):
        parse_answer_form([item("why")], {"q0.other": [text]})


def test_tabs_and_line_breaks_are_kept_in_text() -> None:
    (answer,) = parse_answer_form([item("why")], {"q0.other": ["one\ttwo\r\nthree"]}).values()
    assert answer.custom == "one\ttwo\r\nthree"


def test_no_responders_means_no_name_is_needed() -> None:
    assert parse_responder({}, []) is None


@pytest.mark.parametrize("name", ["alice@example.org", "ALICE@example.org", "Bob", "carol@team.org"])
def test_listed_responders_and_domain_members_may_answer(name: str) -> None:
    assert parse_responder({"by": [f" {name} "]}, ["alice@example.org", "bob", "@team.org"]) == name


@pytest.mark.parametrize("name", ["mallory@example.org", "carol@evil.org", "x@team.org@evil.org", "team.org"])
def test_anyone_else_is_refused_by_name(name: str) -> None:
    with pytest.raises(NotAResponder) as refused:
        parse_responder({"by": [name]}, ["alice@example.org", "@team.org"])
    assert refused.value.name == name


def test_an_empty_name_is_asked_for() -> None:
    with pytest.raises(FormError, match="Answering as"):
        parse_responder({"by": ["  "]}, ["alice@example.org"])


def _deny_plan() -> AskUserQuestionItem:
    return item(
        "perm",
        detail="ls",
        options=options("Allow", "Deny…", "Always allow"),
        intent={"kind": "plan-review", "approve": "Allow", "reject": "Deny…"},
    )


def test_a_reject_option_sends_its_words_or_else_itself() -> None:
    deny = _deny_plan()
    worded = parse_answer_form([deny], {"q0": ["other"], "q0.other": [" not now "]})
    assert worded == {"perm": AskUserQuestionAnswerItem(id="perm", custom="not now")}
    plain = parse_answer_form([deny], {"q0": ["other"], "q0.other": [""]})
    assert plain == {"perm": AskUserQuestionAnswerItem(id="perm", selected=["Deny…"])}


def test_a_reject_option_in_a_batch_is_its_words_choice() -> None:
    items = parse_answer_form([choice(), _deny_plan()], {"q0": ["1"], "q1": ["other"]})
    assert items["perm"] == AskUserQuestionAnswerItem(id="perm", selected=["Deny…"])


def test_allowing_with_a_reason_typed_is_refused_naming_the_reject_button() -> None:
    with pytest.raises(FormError, match="or press Deny…"):
        parse_answer_form([_deny_plan()], {"q0": ["0"], "q0.other": ["not now"]})
