"""Rendering a question as Block Kit: controls by option count, limits, escaping, plan review, batches, outcomes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.blocks import units
from bot.slack.render import (
    RenderError,
    is_batch,
    refusal_notice,
    render_outcome,
    render_question,
    resolved_notice,
)

from .blockkit import check_blocks, elements, mrkdwn_texts
from .records import AGENT, answered, ended, item, labels, record


def kinds(blocks: list[dict[str, Any]]) -> list[str]:
    return [block["type"] for block in blocks]


def only(blocks: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [element for element in elements(blocks) if element["type"] == kind]
    return found


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [element for element in elements(blocks) if element["type"] == "button"]


def all_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(mrkdwn_texts(blocks))


# --- controls by option count ------------------------------------------------------------------------------------


def test_two_options_are_buttons_with_the_recommended_one_primary_and_other() -> None:
    blocks = render_question(record(item(options=["Yes (Recommended)", "No"]))).blocks
    check_blocks(blocks)
    shown = [(b["text"]["text"], b["action_id"], b["value"], b.get("style")) for b in buttons(blocks)]
    assert shown == [
        ("Yes (Recommended)", "hr.pick.0.0", "0", "primary"),
        ("No", "hr.pick.0.1", "1", None),
        ("Other…", "hr.text.0", "text", None),
    ]


@pytest.mark.parametrize(
    ("count", "kind", "action_id"),
    [
        (5, "button", "hr.pick.0.4"),
        (6, "radio_buttons", "hr.choose.0"),
        (10, "radio_buttons", "hr.choose.0"),
        (11, "static_select", "hr.choose.0"),
        (100, "static_select", "hr.choose.0"),
    ],
)
def test_single_select_control_follows_the_option_count(count: int, kind: str, action_id: str) -> None:
    blocks = render_question(record(item(options=labels(count)))).blocks
    check_blocks(blocks)
    found = [e for e in elements(blocks) if e["type"] == kind and e["action_id"] != "hr.text.0"]
    assert found[-1]["action_id"] == action_id
    if kind != "button":
        assert [o["value"] for o in found[0]["options"]] == [str(n) for n in range(count)]
    assert not any(b["action_id"] == "hr.submit" for b in buttons(blocks)), "one click answers a lone question"


@pytest.mark.parametrize(
    ("count", "kind"),
    [(3, "checkboxes"), (10, "checkboxes"), (11, "multi_static_select"), (100, "multi_static_select")],
)
def test_multi_select_is_held_until_submit(count: int, kind: str) -> None:
    blocks = render_question(record(item(options=labels(count), multi_select=True))).blocks
    check_blocks(blocks)
    assert only(blocks, kind)["action_id"] == "hr.hold.0"
    assert [b["action_id"] for b in buttons(blocks)] == ["hr.text.0", "hr.submit"]
    assert buttons(blocks)[-1]["style"] == "primary"


@pytest.mark.parametrize("multi", [False, True])
def test_more_than_100_options_is_a_clear_error_not_a_broken_message(multi: bool) -> None:
    with pytest.raises(RenderError, match=r"question q1 has 101 options; a Slack menu holds at most 100"):
        render_question(record(item(options=labels(101), multi_select=multi)))


def test_a_question_without_options_offers_answer() -> None:
    blocks = render_question(record(item("What should the release be called?"))).blocks
    check_blocks(blocks)
    assert [(b["text"]["text"], b["action_id"]) for b in buttons(blocks)] == [("Answer…", "hr.text.0")]


# --- text, limits and escaping -----------------------------------------------------------------------------------


def test_header_question_agent_and_mentions_are_shown() -> None:
    message = render_question(record(item(header="Deploy", options=["Yes", "No"])), mentions=["U0BOB", "S0OPS"])
    check_blocks(message.blocks)
    assert message.blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "Deploy", "emoji": True}}
    assert message.blocks[1]["text"]["text"] == "Deploy v2 to production?"
    footer = message.blocks[-1]["elements"]
    assert footer[0]["text"] == "Asked by *deploy-bot*"
    assert footer[1]["text"] == "For <@U0BOB> <!subteam^S0OPS>"
    assert message.text == "<@U0BOB> <!subteam^S0OPS> deploy-bot asks: Deploy v2 to production?"


def test_mentions_that_are_not_slack_ids_are_dropped() -> None:
    message = render_question(record(), mentions=["<!channel>", "U0OK", "here"])
    assert "For <@U0OK>" in all_text(message.blocks) and "channel" not in message.text


def test_a_long_header_is_clipped_to_150() -> None:
    blocks = render_question(record(item(header="H" * 400, options=["a"]))).blocks
    check_blocks(blocks)
    assert units(blocks[0]["text"]["text"]) == 150 and blocks[0]["text"]["text"].endswith("…")


def test_mrkdwn_in_agent_text_cannot_mention_or_link() -> None:
    hostile = "<!channel> ping <@U0BOSS> & <https://evil.example|your bank>"
    question = item(hostile, header=hostile, detail=hostile, options=[{"label": hostile, "description": hostile}])
    evil_agent = AGENT.model_copy(update={"name": "<!here> agent"})
    message = render_question(record(question, agent=evil_agent))
    check_blocks(message.blocks)  # asserts that no `<…>` but our own mentions is left in any mrkdwn
    text = all_text(message.blocks)
    assert "&lt;!channel&gt; ping &lt;@U0BOSS&gt; &amp; &lt;https://evil.example|your bank&gt;" in text
    assert "*&lt;!here&gt; agent*" in text
    assert "<!channel>" not in message.text and "<!here>" not in message.text
    assert message.blocks[0]["text"]["text"].startswith("<!channel>"), "plain_text is shown as-is, not parsed"


def test_a_4000_character_detail_is_split_into_sections() -> None:
    detail = "\n".join(f"line {n:04d} " + "x" * 90 for n in range(40))
    blocks = render_question(record(item(detail=detail, options=["Yes", "No"]))).blocks
    check_blocks(blocks)
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"][1:]
    assert len(sections) == 2 and "\n".join(sections) == detail
    assert "more characters" not in all_text(blocks)


def test_a_huge_detail_is_truncated_with_a_marker_within_50_blocks() -> None:
    detail = "word " * 60_000
    blocks = render_question(record(item(detail=detail, options=["Yes", "No"]))).blocks
    check_blocks(blocks)
    assert len(blocks) == 50
    last = [b for b in blocks if b["type"] == "section"][-1]["text"]["text"]
    marker = re.search(r"… \((\d+) more characters\)$", last)
    assert marker is not None
    shown = sum(len(b["text"]["text"]) for b in blocks if b["type"] == "section") - len(marker[0])
    assert int(marker[1]) > 0 and abs(int(marker[1]) + shown - len(detail)) < 200


def test_labels_longer_than_75_are_clipped_on_buttons_and_listed_in_full() -> None:
    long = "Roll back the deployment and page the database on-call engineer before retrying"
    blocks = render_question(record(item(options=[long, "Carry on"]))).blocks
    check_blocks(blocks)
    first = buttons(blocks)[0]
    assert len(long) > 75 and first["text"]["text"] == long[:74].rstrip() + "…" and first["value"] == "0"
    assert f"*1.* {long}" in all_text(blocks)


def test_emoji_labels_are_clipped_by_utf16_units() -> None:
    blocks = render_question(record(item(options=["🚀" * 60, "🐢"]))).blocks
    check_blocks(blocks)
    assert units(buttons(blocks)[0]["text"]["text"]) <= 75


def test_descriptions_are_listed_for_buttons_and_inline_for_radio_buttons() -> None:
    described = [{"label": f"L{n}", "description": f"what L{n} does"} for n in range(3)]
    blocks = render_question(record(item(options=described))).blocks
    assert "*1.* L0 — what L0 does" in all_text(blocks)
    radio = render_question(record(item(options=[*described, *labels(4)]))).blocks
    check_blocks(radio)
    assert only(radio, "radio_buttons")["options"][0]["description"]["text"] == "what L0 does"
    assert "what L0 does" not in all_text(radio)


def test_empty_and_blank_text_never_makes_an_empty_text_object() -> None:
    blocks = render_question(record(item("   ", header=" ", options=["", " "], detail="\n\n"))).blocks
    check_blocks(blocks)


# --- plan review and batches -------------------------------------------------------------------------------------

PLAN = (
    "# Plan\n\n1. Drain **node-a**\n- migrate `db` (see [runbook](https://wiki/runbook))\n\n"
    "```\nkubectl drain <node>\n```"
)


def plan_review() -> Any:
    return item(
        "Approve this plan?",
        id="plan",
        detail=PLAN,
        options=["Approve", "Reject"],
        intent={"kind": "plan-review", "approve": "Approve"},
    )


def test_plan_review_shows_the_plan_readably_with_approve_primary_and_request_changes() -> None:
    blocks = render_question(record(plan_review())).blocks
    check_blocks(blocks)
    plan = blocks[1]["text"]["text"]
    assert plan == (
        "*Plan*\n\n1. Drain *node-a*\n• migrate `db` (see runbook (https://wiki/runbook))\n\n"
        "```\nkubectl drain &lt;node&gt;\n```"
    )
    shown = [(b["text"]["text"], b.get("style")) for b in buttons(blocks)]
    assert shown == [("Approve", "primary"), ("Reject", None), ("Request changes…", None)]


def test_several_questions_are_held_per_user_until_submit() -> None:
    batch = record(
        item("Which region?", id="region", header="Region", options=labels(3)),
        item("Which features?", id="features", options=labels(12), multi_select=True),
        item("Anything else?", id="notes"),
    )
    assert is_batch(batch)
    blocks = render_question(batch).blocks
    check_blocks(blocks)
    assert "header" not in kinds(blocks)
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert texts[:3] == ["*1. Region*\nWhich region?", "*2.* Which features?", "*3.* Anything else?"]
    assert [e["action_id"] for e in elements(blocks)] == [
        "hr.hold.0",
        "hr.text.0",
        "hr.hold.1",
        "hr.text.1",
        "hr.text.2",
        "hr.submit",
    ]
    assert only(blocks, "radio_buttons")["action_id"] == "hr.hold.0"
    assert "one line per question" in blocks[-1]["elements"][-1]["text"]


def test_too_many_questions_for_one_message_is_a_render_error() -> None:
    many = [item(f"Q{n}?", id=f"q{n}", options=["a", "b"]) for n in range(30)]
    with pytest.raises(RenderError, match=r"needs .* blocks but a Slack message holds 50"):
        render_question(record(*many))


# --- outcomes ----------------------------------------------------------------------------------------------------


def test_an_answered_question_shows_who_what_and_when_without_buttons() -> None:
    done = answered(record(item(header="Deploy", options=["Yes", "No"])), [{"id": "q1", "selected": ["No"]}])
    message = render_outcome(done)
    check_blocks(message.blocks)
    assert "actions" not in kinds(message.blocks)
    text = all_text(message.blocks)
    assert (
        ":white_check_mark: *Answered* by <@U0ALICE> "
        "<!date^1767258300^{date_short_pretty} at {time}|2026-01-01 09:05 UTC>" in text
    )
    assert "\n*No*" in text
    assert message.text == "Answered: Deploy v2 to production?"


def test_an_answer_from_another_channel_names_it() -> None:
    done = answered(record(), [{"id": "q1", "custom": "<!channel> later"}], by="ops@example.org", via="email")
    text = all_text(render_outcome(done).blocks)
    assert "by ops@example.org via email" in text and "“&lt;!channel&gt; later”" in text


def test_a_batch_outcome_lists_each_answer_and_skips() -> None:
    batch = record(item("A?", id="a", options=["x", "y"]), item("B?", id="b", options=["u", "v"], multi_select=True))
    done = answered(batch, [{"id": "a", "selected": []}, {"id": "b", "selected": ["u", "v"], "custom": "and w"}])
    text = all_text(render_outcome(done).blocks)
    assert "*1.* _skipped_" in text and "*2.* *u*, *v* + “and w”" in text


@pytest.mark.parametrize(
    ("status", "shown"), [("cancelled", ":no_entry_sign: *Cancelled*"), ("expired", ":hourglass: *Expired*")]
)
def test_cancelled_and_expired_questions_say_so(status: str, shown: str) -> None:
    message = render_outcome(ended(record(), status, "nobody answered within 2h", "ASK_TIMEOUT"))
    check_blocks(message.blocks)
    assert shown in all_text(message.blocks) and "nobody answered within 2h" in all_text(message.blocks)
    assert "actions" not in kinds(message.blocks)


def test_late_answerers_are_told_who_answered_and_when() -> None:
    done = answered(record(), [{"id": "q1", "selected": ["No"]}])
    assert resolved_notice(done).startswith("This question was already answered by <@U0ALICE> <!date^1767258300^")
    assert resolved_notice(ended(record(), "expired", "nobody answered within 2h", "ASK_TIMEOUT")).startswith(
        "This question is closed — it was expired"
    )


def test_refusals_name_who_may_answer() -> None:
    assert (
        refusal_notice(["U0BOB", "S0OPS"])
        == "You can't answer this question: only <@U0BOB>, <!subteam^S0OPS> may. Nothing was changed."
    )


# --- anything an agent may send renders within the limits ---------------------------------------------------------

hostile_text = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("<>&*_~`@!#|\n"), max_size=400)


@settings(max_examples=150, deadline=None)
@given(
    questions=st.lists(
        st.fixed_dictionaries(
            {
                "question": hostile_text,
                "header": st.none() | hostile_text,
                "detail": st.none() | hostile_text | st.text(min_size=3000, max_size=9000),
                "options": st.none()
                | st.lists(
                    st.fixed_dictionaries({"label": hostile_text, "description": st.none() | hostile_text}),
                    max_size=100,
                ),
                "multi_select": st.booleans(),
            }
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_question_renders_within_block_kit_limits(questions: list[dict[str, Any]]) -> None:
    items = [item(**q, id=f"q{n}") for n, q in enumerate(questions)]
    message = render_question(record(*items), mentions=["U0BOB"])
    check_blocks(message.blocks)
    assert 0 < units(message.text) <= 3000
    done = answered(record(*items), [{"id": f"q{n}", "custom": q["question"] or "x"} for n, q in enumerate(questions)])
    check_blocks(render_outcome(done).blocks)
