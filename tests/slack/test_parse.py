"""Reading Slack payloads as answers: clicks, modal submissions and thread replies; garbage is never an answer."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.ids import ModalRef
from bot.slack.parse import (
    Answer,
    Held,
    OpenModal,
    ParseError,
    ReplyError,
    ViewErrors,
    decide,
    message_time,
    parse_thread_reply,
    posted_after,
    read_block_actions,
    read_modal_answer,
    read_view_ref,
    slack_text_to_plain,
)
from core import AskUserQuestionItem

from .payloads import block_actions, button, held, radio, text_entry, view_submission
from .records import item, labels

LONG = "Roll back the deployment and page the database on-call engineer before retrying, twice over " * 3
SINGLE = [item(options=["Yes (Recommended)", LONG, "No"])]
MULTI = [item(options=labels(12), multi_select=True)]
BATCH = [
    item("Region?", id="region", options=labels(3)),
    item("Features?", id="features", options=labels(4), multi_select=True),
    item("Notes?", id="notes"),
]


def answer(intent: object) -> dict[str, Any]:
    assert isinstance(intent, Answer)
    return {key: value.to_wire() for key, value in intent.items.items()}


def click(action: dict[str, Any], questions: list[AskUserQuestionItem], **fields: Any) -> Any:
    return decide(read_block_actions(block_actions(action, **fields)), questions)


# --- block_actions -----------------------------------------------------------------------------------------------


def test_a_click_knows_its_user_message_and_thread() -> None:
    interaction = read_block_actions(block_actions(button("hr.pick.0.1", "1"), thread_ts="1699.0001"))
    assert (interaction.user, interaction.key, interaction.thread_ts) == (
        "U0ALICE",
        "C0DEPLOY:1700000000.000100",
        "1699.0001",
    )
    assert interaction.trigger_id == "1234.5678.abcdef"


def test_a_button_answers_with_the_full_label_from_its_short_value() -> None:
    assert answer(click(button("hr.pick.0.1", "1"), SINGLE)) == {"q1": {"id": "q1", "selected": [LONG]}}


def test_a_radio_group_or_menu_answers_a_lone_question_at_once() -> None:
    assert answer(click(radio("hr.choose.0", 2), SINGLE)) == {"q1": {"id": "q1", "selected": ["No"]}}


def test_a_held_selection_is_only_acknowledged() -> None:
    assert isinstance(click({"type": "checkboxes", "action_id": "hr.hold.0", "selected_options": []}, MULTI), Held)


def test_submit_reads_the_users_own_selections_from_the_message_state() -> None:
    state = held(0, 11, 2)
    assert answer(click(button("hr.submit", "submit"), MULTI, state=state)) == {
        "q1": {"id": "q1", "selected": ["Option 12", "Option 3"]}
    }


def test_submit_in_a_batch_skips_what_was_not_chosen() -> None:
    state = held(0, 1, kind="radio_buttons") | held(1, kind="checkboxes")
    assert answer(click(button("hr.submit", "submit"), BATCH, state=state)) == {
        "region": {"id": "region", "selected": ["Option 2"]},
        "features": {"id": "features", "selected": []},
    }


def test_submit_with_nothing_chosen_tells_the_user() -> None:
    with pytest.raises(ReplyError, match="Choose something before pressing Submit"):
        click(button("hr.submit", "submit"), BATCH, state=held(0, kind="radio_buttons"))


def test_a_text_button_opens_the_modal_with_the_choices_so_far() -> None:
    intent = click(button("hr.text.2", "text"), BATCH, state=held(0, 2, kind="radio_buttons") | held(1, 0, 3))
    assert intent == OpenModal(2, {0: [2], 1: [0, 3]})


@pytest.mark.parametrize(
    ("action", "questions"),
    [
        (button("hr.pick.0.3", "3"), SINGLE),  # no option 3
        (button("hr.pick.0.1", "2"), SINGLE),  # value and id disagree
        (button("hr.pick.5.0", "0"), SINGLE),  # no question 5
        (button("hr.pick.0.0", "0"), BATCH),  # batches are never answered by one click
        (button("hr.pick.0.0", "0"), MULTI),
        (radio("hr.choose.0", 99), SINGLE),
        ({"type": "static_select", "action_id": "hr.choose.0", "selected_option": None}, SINGLE),
        ({"type": "static_select", "action_id": "hr.choose.0", "selected_option": "0"}, SINGLE),
        (button("hr.text.9", "text"), SINGLE),
    ],
)
def test_a_click_our_message_could_not_have_made_is_refused(action: dict[str, Any], questions: Any) -> None:
    with pytest.raises(ParseError):
        click(action, questions)


def test_a_forged_held_state_is_refused() -> None:
    with pytest.raises(ParseError):
        click(button("hr.submit", "submit"), MULTI, state=held(0, 40))
    with pytest.raises(ParseError):
        click(button("hr.submit", "submit"), MULTI, state={"hr.q0.choice": {"hr.hold.0": {"selected_options": "all"}}})


@pytest.mark.parametrize(
    "mangle",
    [
        lambda p: p | {"type": "view_submission"},
        lambda p: p | {"user": None},
        lambda p: p | {"user": {"id": 7}},
        lambda p: p | {"actions": []},
        lambda p: p | {"actions": p["actions"] * 2},
        lambda p: p | {"actions": [button("someone.elses.button", "1")]},
        lambda p: p | {"actions": [button("hr.pick.0.99999", "1")]},
        lambda p: p | {"container": {}, "channel": None},
        lambda p: p | {"container": {"channel_id": "C" * 300, "message_ts": "1.0"}},
        lambda p: [p],
        lambda p: None,
    ],
)
def test_malformed_block_actions_are_parse_errors(mangle: Any) -> None:
    with pytest.raises(ParseError):
        read_block_actions(mangle(block_actions(button("hr.pick.0.0", "0"))))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(
    garbage=st.dictionaries(
        st.sampled_from(["type", "user", "container", "actions", "state", "channel", "message"]), json_values
    )
)
def test_any_garbage_is_a_parse_error_or_a_well_formed_click(garbage: dict[str, Any]) -> None:
    payload = block_actions(button("hr.submit", "submit")) | garbage
    try:
        interaction = read_block_actions(payload)
        decide(interaction, BATCH)
    except (ParseError, ReplyError):
        pass


# --- view_submission ---------------------------------------------------------------------------------------------

REF = ModalRef("q_1", "C0DEPLOY", "1700000000.000100", "1699.0001")


def test_a_modal_submission_carries_its_reference() -> None:
    user, ref, values = read_view_ref(view_submission(REF, {"hr.m0.text": text_entry("hi")}))
    assert (user, ref, values) == ("U0ALICE", REF, {"hr.m0.text": text_entry("hi")})


@pytest.mark.parametrize(
    "payload",
    [
        view_submission(REF, {}, callback_id="someone_else"),
        view_submission(REF, {}) | {"type": "block_actions"},
        view_submission(REF, {}) | {"view": {"callback_id": "hr.answer", "private_metadata": "{not json"}},
        view_submission(REF, {}) | {"view": {"callback_id": "hr.answer", "private_metadata": json.dumps({"q": 1})}},
        view_submission(REF, {}) | {"view": {"callback_id": "hr.answer", "private_metadata": "[]"}},
    ],
)
def test_a_submission_that_is_not_our_modal_is_a_parse_error(payload: dict[str, Any]) -> None:
    with pytest.raises(ParseError):
        read_view_ref(payload)


def test_words_in_the_modal_are_the_custom_answer() -> None:
    items = read_modal_answer({"hr.m0.text": text_entry("  Ship on Monday instead  ")}, SINGLE)
    assert {k: v.to_wire() for k, v in items.items()} == {
        "q1": {"id": "q1", "selected": [], "custom": "Ship on Monday instead"}
    }


def test_a_batch_modal_answers_every_question() -> None:
    values = {
        "hr.m0.choice": {"choice": {"type": "radio_buttons", "selected_option": {"value": "0"}}},
        "hr.m0.text": text_entry(None),
        "hr.m1.choice": {"choice": {"type": "checkboxes", "selected_options": [{"value": "1"}, {"value": "3"}]}},
        "hr.m1.text": text_entry("and docs"),
        "hr.m2.text": text_entry(""),
    }
    items = {k: v.to_wire() for k, v in read_modal_answer(values, BATCH).items()}
    assert items == {
        "region": {"id": "region", "selected": ["Option 1"]},
        "features": {"id": "features", "selected": ["Option 2", "Option 4"], "custom": "and docs"},
        "notes": {"id": "notes", "selected": []},
    }


def test_an_empty_modal_is_shown_an_error_in_place() -> None:
    with pytest.raises(ViewErrors) as raised:
        read_modal_answer({"hr.m0.text": text_entry("   ")}, SINGLE)
    assert raised.value.errors == {"hr.m0.text": "Write an answer (or choose an option) before sending."}


def test_a_modal_choice_that_names_no_option_is_a_parse_error() -> None:
    values = {"hr.m1.choice": {"choice": {"type": "checkboxes", "selected_options": [{"value": "9"}]}}}
    with pytest.raises(ParseError):
        read_modal_answer(values, BATCH)


# --- thread replies ----------------------------------------------------------------------------------------------


def reply(text: str, questions: list[AskUserQuestionItem]) -> dict[str, Any]:
    return {key: value.to_wire() for key, value in parse_thread_reply(text, questions).items()}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("2", [LONG]),
        ("#3.", ["No"]),
        ("yes", ["Yes (Recommended)"]),
        ("  YES (recommended)! ", ["Yes (Recommended)"]),
        ("<@U0BOT> 1", ["Yes (Recommended)"]),
        (LONG.upper(), [LONG]),
    ],
)
def test_a_number_or_a_label_picks_an_option(text: str, selected: list[str]) -> None:
    assert reply(text, SINGLE) == {"q1": {"id": "q1", "selected": selected}}


def test_anything_else_is_free_text() -> None:
    assert reply("Only after the &lt;freeze&gt; &amp; the backup", SINGLE) == {
        "q1": {"id": "q1", "selected": [], "custom": "Only after the <freeze> & the backup"}
    }


def test_several_numbers_pick_several_options_of_a_multi_select() -> None:
    assert reply("1, 3 and 12", MULTI) == {"q1": {"id": "q1", "selected": ["Option 1", "Option 3", "Option 12"]}}
    assert reply("option 2; Option 4", MULTI) == {"q1": {"id": "q1", "selected": ["Option 2", "Option 4"]}}


@pytest.mark.parametrize(
    ("text", "questions", "problem"),
    [
        ("7", SINGLE, "There is no option 7: reply with a number from 1 to 3"),
        ("1 2", SINGLE, "This question takes one choice"),
        ("  ", SINGLE, "That reply is empty"),
        ("yes please", BATCH, "This message asks 3 questions: reply with one line per question"),
        ("4: hi", BATCH, "There is no question 4"),
        ("1: a\n1: b", BATCH, "Question 1 is answered twice"),
    ],
)
def test_a_reply_that_cannot_be_read_says_what_to_send(text: str, questions: Any, problem: str) -> None:
    with pytest.raises(ReplyError, match=problem):
        parse_thread_reply(text, questions)


def test_a_batch_reply_answers_line_by_line() -> None:
    text = "1: 3\nQ2) option 1, Option 4\n3. Ship it\non Monday"
    assert reply(text, BATCH) == {
        "region": {"id": "region", "selected": ["Option 3"]},
        "features": {"id": "features", "selected": ["Option 1", "Option 4"]},
        "notes": {"id": "notes", "selected": [], "custom": "Ship it\non Monday"},
    }


def test_a_label_that_is_a_number_wins_over_the_position() -> None:
    assert reply("20", [item(options=["10", "20"])]) == {"q1": {"id": "q1", "selected": ["20"]}}


def test_slack_markup_is_read_as_the_person_wrote_it() -> None:
    text = (
        "<@U0BOB> see <https://x.example/a|the doc> and <https://y.example> <#C0OPS|ops> <!here> <mailto:a@b.c|a@b.c>"
    )
    assert (
        slack_text_to_plain(text) == "@U0BOB see the doc (https://x.example/a) and https://y.example #ops @here a@b.c"
    )


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), batch=st.booleans())
def test_any_reply_is_an_answer_or_a_reply_error(text: str, batch: bool) -> None:
    with contextlib.suppress(ReplyError):
        parse_thread_reply(text, BATCH if batch else SINGLE)


# --- message order ---------------------------------------------------------------------------------------------------


def test_message_ts_order_is_posting_order() -> None:
    assert posted_after("1700000000.000010", "1700000000.000009")
    assert posted_after("1700000001.000000", "1700000000.999999")
    assert not posted_after("1700000000.000009", "1700000000.000010")
    assert not posted_after("1700000000.000010", "1700000000.000010")


@pytest.mark.parametrize(
    "garbage",
    ["", "now", "1700000000", "1700000000.", ".000001", "1700000000.0000001", "-1700000000.000001", "1e9.000001",
     "1700000000.000001 ", "9" * 13 + ".000001", "\u0661\u0667" + "\u0660" * 8 + ".000001",
     None, 1700000000.5, ["1700000000.000001"]],
)  # fmt: skip
def test_anything_but_a_message_ts_is_never_later_or_earlier(garbage: object) -> None:
    assert message_time(garbage) is None
    assert not posted_after(garbage, "1700000000.000001")
    assert not posted_after("1700000000.000001", garbage)


@given(ts=st.text(max_size=40), than=st.text(max_size=40))
def test_only_two_message_ts_are_ever_in_order(ts: str, than: str) -> None:
    if posted_after(ts, than):
        assert message_time(ts) is not None and message_time(than) is not None
