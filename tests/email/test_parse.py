"""The reply grammar: numbers, labels, lists, plan review, several questions, skip, and what cannot be read."""

from __future__ import annotations

import pytest

from bot.email.parse import parse_reply
from core import AskUserQuestionAnswerItem

from .samples import DATABASE, FEATURES, NAME, PLAN

Item = AskUserQuestionAnswerItem


def picked(*labels: str, id: str = "db", custom: str | None = None) -> dict[str, Item]:
    return {id: Item(id=id, selected=list(labels), custom=custom)}


@pytest.mark.parametrize(
    "text", ["2", "2.", "#2", "option 2", "Option #2", "  2  ", "2)", "SQLite", "sqlite", "SQLITE.", "2. SQLite"]
)
def test_one_option_by_number_or_label(text: str) -> None:
    assert parse_reply(text, [DATABASE]).items == picked("SQLite")


@pytest.mark.parametrize("text", ["postgres", "Postgres (Recommended)", "postgres (recommended)", "1"])
def test_recommended_is_optional_in_a_label(text: str) -> None:
    assert parse_reply(text, [DATABASE]).items == picked("Postgres (Recommended)")


def test_an_option_line_copied_with_its_description_is_that_option() -> None:
    assert parse_reply("SQLite - Simplest to run", [DATABASE]).items == picked("SQLite")


def test_other_text_is_the_custom_answer_with_nothing_selected() -> None:
    assert parse_reply("Use Redis instead", [DATABASE]).items == picked(custom="Use Redis instead")


def test_a_label_followed_by_more_words_is_custom_so_nothing_is_lost() -> None:
    assert parse_reply("SQLite: but with WAL", [DATABASE]).items == picked(custom="SQLite: but with WAL")


def test_a_number_past_the_options_is_a_problem_naming_the_range() -> None:
    parsed = parse_reply("7", [DATABASE])
    assert parsed.items == {}
    assert parsed.problems == ["there is no option 7; the options are numbered 1 to 3"]


def test_the_start_of_exactly_one_label_names_it() -> None:
    assert parse_reply("Search", [FEATURES]).items == picked("Search and replace", id="features")


def test_a_label_start_shared_by_two_options_is_ambiguous() -> None:
    question = DATABASE.model_validate(
        {"id": "db", "question": "?", "options": [{"label": "Deploy now"}, {"label": "Deploy later"}]}
    )
    parsed = parse_reply("deploy", [question])
    assert parsed.items == {}
    assert "could be any of" in parsed.problems[0] and "number instead" in parsed.problems[0]


def test_two_identical_labels_are_ambiguous() -> None:
    question = DATABASE.model_validate(
        {"id": "db", "question": "?", "options": [{"label": "Yes (Recommended)"}, {"label": "Yes"}]}
    )
    assert "more than one option" in parse_reply("yes", [question]).problems[0]


@pytest.mark.parametrize(
    "text",
    ["1, 2", "1,2", "1 2", "1 and 2", "Auth and Billing", "auth, billing", "1\n2", "- Auth\n- Billing", "#1; #2"],
)
def test_multi_select_takes_several_separated_as_people_write_them(text: str) -> None:
    assert parse_reply(text, [FEATURES]).items == picked("Auth", "Billing", id="features")


def test_a_label_containing_and_is_not_split() -> None:
    assert parse_reply("search and replace", [FEATURES]).items == picked("Search and replace", id="features")


def test_multi_select_text_lines_supplement_the_choices() -> None:
    parsed = parse_reply("1\n4\nand please add SSO later", [FEATURES])
    assert parsed.items == picked("Auth", "Export", id="features", custom="and please add SSO later")


def test_multi_select_with_only_text_is_custom() -> None:
    assert parse_reply("whatever is ready", [FEATURES]).items == picked(id="features", custom="whatever is ready")


def test_multi_select_with_a_number_out_of_range_is_a_problem() -> None:
    assert parse_reply("1, 9", [FEATURES]).problems == ["there is no option 9; the options are numbered 1 to 4"]


@pytest.mark.parametrize("text", ["approve", "APPROVE", "Approved", "approved.", "Approve!"])
def test_plan_review_approve_in_any_case_selects_the_approve_label(text: str) -> None:
    assert parse_reply(text, [PLAN]).items == picked("Approve", id="plan")


def test_plan_review_other_text_requests_changes() -> None:
    text = "Swap steps 2 and 3, and back up first."
    assert parse_reply(text, [PLAN]).items == picked(id="plan", custom=text)


def test_a_question_without_options_takes_any_text() -> None:
    assert parse_reply("payments-api", [NAME]).items == picked(id="name", custom="payments-api")


def test_skip_skips_a_single_question() -> None:
    assert parse_reply("skip", [DATABASE]).items == picked()


def test_an_empty_reply_is_a_problem() -> None:
    assert "no text of its own" in parse_reply("  ", [DATABASE]).problems[0]


def test_a_single_question_may_be_answered_with_its_own_number() -> None:
    assert parse_reply("1: SQLite", [DATABASE]).items == picked("SQLite")


@pytest.mark.parametrize("sep", [":", ".", ")"])
def test_several_questions_take_numbered_lines(sep: str) -> None:
    text = f"1{sep} 2\n2{sep} auth, export\n3{sep} approve"
    parsed = parse_reply(text, [DATABASE, FEATURES, PLAN])
    assert parsed.problems == []
    assert parsed.items == {
        **picked("SQLite"),
        **picked("Auth", "Export", id="features"),
        **picked("Approve", id="plan"),
    }


def test_several_questions_skip_and_leave_out() -> None:
    parsed = parse_reply("1: skip\n3: looks wrong, redo step 2", [DATABASE, FEATURES, PLAN])
    assert parsed.items == {**picked(), **picked(id="plan", custom="looks wrong, redo step 2")}
    assert "features" not in parsed.items


def test_lines_without_a_number_continue_the_answer_above() -> None:
    parsed = parse_reply("3: change the plan:\nfirst back up\nthen copy\n1: 1", [DATABASE, FEATURES, PLAN])
    assert parsed.items["plan"].custom == "change the plan:\nfirst back up\nthen copy"
    assert parsed.items["db"].selected == ["Postgres (Recommended)"]


def test_several_questions_without_numbers_explain_the_form() -> None:
    parsed = parse_reply("2", [DATABASE, FEATURES, PLAN])
    assert parsed.items == {}
    assert '"1: ..."' in parsed.problems[0]


def test_a_question_number_past_the_end_is_a_problem_but_the_rest_is_kept() -> None:
    parsed = parse_reply("1: 2\n5: yes", [DATABASE, FEATURES, PLAN])
    assert parsed.items == picked("SQLite")
    assert parsed.problems == ["there is no question 5; the questions are numbered 1 to 3"]


def test_a_problem_in_one_answer_names_its_question() -> None:
    parsed = parse_reply("1: 4\n3: approve", [DATABASE, FEATURES, PLAN])
    assert parsed.items == picked("Approve", id="plan")
    assert parsed.problems == ["question 1: there is no option 4; the options are numbered 1 to 3"]


def test_when_one_question_is_left_a_bare_answer_is_for_it() -> None:
    parsed = parse_reply("approve", [DATABASE, FEATURES, PLAN], answered={"db", "features"})
    assert parsed.items == picked("Approve", id="plan")


def test_a_question_answered_twice_in_one_reply_keeps_the_first() -> None:
    parsed = parse_reply("1: 1\n1: 2\n2: 1\n3: approve", [DATABASE, FEATURES, PLAN])
    assert parsed.items["db"].selected == ["Postgres (Recommended)"]
    assert parsed.problems == ["question 1 is answered twice; the first answer was used"]


@pytest.mark.parametrize(
    "text",
    [
        "My picks:\n- Auth\n- Billing",
        "Here's what I'd ship first:\n* Auth\n* Billing",
        "We need these two\n• Auth\n• Billing",
        "Picks：\n1. Auth\n2. Billing",  # noqa: RUF001 (a full-width colon, as Chinese and Japanese write it)
        "1. Auth\n2. Billing",
        "1) auth\n2) billing",
    ],
)
def test_a_list_of_options_under_a_lead_in_selects_them_without_a_custom_answer(text: str) -> None:
    assert parse_reply(text, [FEATURES]).items == picked("Auth", "Billing", id="features")


def test_a_numbered_list_of_labels_goes_by_the_labels_not_the_numbers() -> None:
    assert parse_reply("1. Billing\n2. Export", [FEATURES]).items == picked("Billing", "Export", id="features")


def test_a_sentence_above_options_without_a_list_or_colon_stays_custom() -> None:
    parsed = parse_reply("Only if legal agrees\nAuth\nBilling", [FEATURES])
    assert parsed.items == picked("Auth", "Billing", id="features", custom="Only if legal agrees")


def test_a_lead_in_above_a_list_with_a_non_option_keeps_everything() -> None:
    parsed = parse_reply("My picks:\n- Auth\n- SSO", [FEATURES])
    assert parsed.items == picked("Auth", id="features", custom="My picks:\n- SSO")


def test_a_lead_in_above_one_option_picks_it_for_a_single_choice() -> None:
    assert parse_reply("My vote:\n- SQLite", [DATABASE]).items == picked("SQLite")


def test_a_lead_in_in_a_numbered_answer_to_several_questions_is_dropped() -> None:
    parsed = parse_reply("1: 2\n2: these two:\n- auth\n- export\n3: approve", [DATABASE, FEATURES, PLAN])
    assert parsed.items["features"] == Item(id="features", selected=["Auth", "Export"])
