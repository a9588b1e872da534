"""The free-text modal: one text box for a lone question, the whole batch as a prefilled form for several."""

from __future__ import annotations

from typing import Any

from bot.slack.ids import ModalRef
from bot.slack.modal import render_answer_modal, render_notice_view

from .blockkit import check_view
from .records import item, labels, record

REF = ModalRef("q_snapshot000000", "C0DEPLOY", "1700000000.000100", None)


def inputs(view: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(b["block_id"], b["element"]["type"], b["optional"]) for b in view["blocks"] if b["type"] == "input"]


def test_a_lone_single_select_question_asks_for_words_only() -> None:
    view = render_answer_modal(record(), 0, REF)
    check_view(view)
    assert view["title"]["text"] == "Answer" and view["callback_id"] == "hr.answer"
    assert inputs(view) == [("hr.m0.text", "plain_text_input", False)]
    assert view["blocks"][1]["element"]["focus_on_load"] is True
    assert ModalRef.load(view["private_metadata"]) == REF


def test_plan_review_asks_what_should_change() -> None:
    plan = item(
        "Approve?", detail="the plan", options=["Approve", "No"], intent={"kind": "plan-review", "approve": "Approve"}
    )
    view = render_answer_modal(record(plan), 0, REF)
    check_view(view)
    assert view["title"]["text"] == "Request changes"
    assert view["blocks"][1]["label"]["text"] == "What should change?"


def test_a_multi_select_question_keeps_the_choices_made_in_the_message() -> None:
    view = render_answer_modal(record(item(options=labels(4), multi_select=True)), 0, REF, chosen={0: [1, 3]})
    check_view(view)
    assert inputs(view) == [("hr.m0.choice", "checkboxes", True), ("hr.m0.text", "plain_text_input", True)]
    assert [o["value"] for o in view["blocks"][1]["element"]["initial_options"]] == ["1", "3"]


def test_a_batch_is_one_prefilled_form_focused_on_the_clicked_question() -> None:
    batch = record(
        item("Region?", id="r", options=labels(3)),
        item("Features?", id="f", options=labels(30), multi_select=True),
        item("Notes?", id="n"),
    )
    view = render_answer_modal(batch, 2, REF, chosen={0: [2], 1: [0, 29], 7: [1]})
    check_view(view)
    assert inputs(view) == [
        ("hr.m0.choice", "radio_buttons", True),
        ("hr.m0.text", "plain_text_input", True),
        ("hr.m1.choice", "multi_static_select", True),
        ("hr.m1.text", "plain_text_input", True),
        ("hr.m2.text", "plain_text_input", True),
    ]
    by_id = {b["block_id"]: b for b in view["blocks"] if "block_id" in b}
    assert by_id["hr.m0.choice"]["element"]["initial_option"]["value"] == "2"
    assert [o["value"] for o in by_id["hr.m1.choice"]["element"]["initial_options"]] == ["0", "29"]
    focused = [block_id for block_id, b in by_id.items() if b.get("element", {}).get("focus_on_load")]
    assert focused == ["hr.m2.text"]


def test_a_prefill_naming_no_option_is_ignored() -> None:
    view = render_answer_modal(record(item(options=labels(3), multi_select=True)), 0, REF, chosen={0: [5, -1]})
    check_view(view)
    assert "initial_options" not in view["blocks"][1]["element"]


def test_a_notice_view_only_says_something() -> None:
    view = render_notice_view("Already answered", "Answered by <@U0BOB>")
    check_view(view)
    assert "submit" not in view and view["blocks"][0]["text"]["text"] == "Answered by <@U0BOB>"
