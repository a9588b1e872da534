"""Answering in Slack through the real bolt app with signed requests: clicks, modals, thread replies, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.slack.ids import ModalRef
from tests.bot.fakes import sync_store

from .payloads import block_actions, button, held, message_event, radio, text_entry, view_submission
from .records import item, labels, plan_review
from .rig import SlackRig, slack_rig, subscription

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"  # the first message the fake Slack posts
YES_NO = item(options=["Yes (Recommended)", "No"])
PLAN = plan_review()
BATCH = [
    item("Which region?", id="region", options=["eu-west-1", "us-east-1", "ap-south-1"]),
    item("Which flags?", id="flags", options=labels(4), multi_select=True),
    item("Anything else?", id="notes"),
]


def wire(answer: Any) -> list[dict[str, Any]]:
    return answer.to_wire()["answers"]


async def updated(rig: SlackRig) -> dict[str, Any]:
    (update,) = await rig.fake.wait_for("chat.update")
    assert update["ts"] == TS and all(block["type"] != "actions" for block in update["blocks"])
    return update


def outcome_text(update: dict[str, Any]) -> str:
    return "\n".join(b["text"]["text"] for b in update["blocks"] if b["type"] == "section")


async def open_modal(rig: SlackRig, question: int = 0, **fields: Any) -> dict[str, Any]:
    await rig.click(block_actions(button(f"hr.text.{question}", "text"), ts=TS, **fields))
    (opened,) = await rig.fake.wait_for("views.open")
    assert opened["trigger_id"] == "1234.5678.abcdef"
    return opened["view"]


async def submit_modal(rig: SlackRig, view: dict[str, Any], values: dict[str, Any], user: str = "U0ALICE") -> Any:
    ref = ModalRef.load(view["private_metadata"])
    assert ref is not None
    return await rig.click(view_submission(ref, values, user=user))


# --- the ways to answer -------------------------------------------------------------------------------------------


async def test_a_single_select_question_is_answered_by_one_click(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        post = await rig.posted()
        assert post["channel"] == "#deploys" and "thread_ts" not in post
        response = await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS))
        assert response.status == 200
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["No"]}]
        update = await updated(rig)
        assert update["channel"] == "C0DEPLOY"
        assert "*Answered* by <@U0ALICE>" in outcome_text(update) and "*No*" in outcome_text(update)


async def test_a_radio_choice_answers_a_question_with_six_options(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(item(options=labels(6)))
        await rig.posted()
        await rig.click(block_actions(radio("hr.choose.0", 5), ts=TS))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["Option 6"]}]


async def test_a_multi_select_question_is_answered_by_checkboxes_and_submit(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(item(options=labels(4), multi_select=True))
        await rig.posted()
        toggle = {"type": "checkboxes", "action_id": "hr.hold.0", "selected_options": []}
        assert (await rig.click(block_actions(toggle, ts=TS))).status == 200
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]
        await rig.click(block_actions(button("hr.submit", "submit"), ts=TS, state=held(0, 0, 2)))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["Option 1", "Option 3"]}]
        await updated(rig)


async def test_other_opens_a_modal_whose_words_are_the_answer(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        view = await open_modal(rig)
        assert view["title"]["text"] == "Answer"
        response = await submit_modal(rig, view, {"hr.m0.text": text_entry("Only after the backup")})
        assert response.status == 200 and response.body == ""  # an empty ack closes the modal
        assert wire(await asked.answer()) == [{"id": "q1", "selected": [], "custom": "Only after the backup"}]
        assert "“Only after the backup”" in outcome_text(await updated(rig))


async def test_an_empty_modal_is_refused_in_place(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(item("What should the release be called?"))
        await rig.posted()
        view = await open_modal(rig)
        response = await submit_modal(rig, view, {"hr.m0.text": text_entry("   ")})
        assert json.loads(response.body) == {
            "response_action": "errors",
            "errors": {"hr.m0.text": "Write an answer (or choose an option) before sending."},
        }


async def test_a_thread_reply_answers_the_open_question_in_that_thread(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        assert (await rig.event(message_event("<@U0BOT> 2", thread_ts=TS))).status == 200
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["No"]}]
        await updated(rig)


async def test_a_thread_reply_in_words_is_the_custom_answer(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.event(message_event("not before Friday &amp; only in eu", thread_ts=TS))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": [], "custom": "not before Friday & only in eu"}]


async def test_a_thread_reply_that_cannot_be_read_gets_help_and_changes_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(*BATCH)
        await rig.posted()
        await rig.event(message_event("sure", thread_ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["user"] == "U0ALICE" and told["thread_ts"] == TS
        assert told["text"].startswith("This message asks 3 questions")
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


async def test_chatter_edits_and_bot_messages_in_threads_are_ignored(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        await rig.event(message_event("2", thread_ts="1600000000.000009"))  # another thread
        await rig.event(message_event("2", thread_ts=None))  # not in a thread
        await rig.event(message_event("2", thread_ts=TS, subtype="message_changed"))
        await rig.event(message_event("2", thread_ts=TS, bot_id="B0OTHER"))
        await rig.event(message_event("2", thread_ts=TS, user="U0BOT"))  # our own
        await anyio.sleep(0.05)
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]
        assert "chat.postEphemeral" not in rig.fake.methods()


async def test_plan_review_is_approved_with_the_primary_button(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PLAN)
        post = await rig.posted()
        primary = [e for b in post["blocks"] if b["type"] == "actions" for e in b["elements"] if e.get("style")]
        assert [e["text"]["text"] for e in primary] == ["Approve"]
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        assert wire(await asked.answer()) == [{"id": "plan", "selected": ["Approve"]}]


async def test_plan_review_request_changes_goes_through_the_modal(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PLAN)
        await rig.posted()
        view = await open_modal(rig)
        assert view["title"]["text"] == "Request changes"
        await submit_modal(rig, view, {"hr.m0.text": text_entry("Drain node-b first")})
        assert wire(await asked.answer()) == [{"id": "plan", "selected": [], "custom": "Drain node-b first"}]


async def test_several_questions_are_answered_together_with_submit(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(*BATCH)
        await rig.posted()
        state = held(0, 1, kind="radio_buttons") | held(1, 0, 3)
        await rig.click(block_actions(button("hr.submit", "submit"), ts=TS, state=state))
        assert wire(await asked.answer()) == [
            {"id": "region", "selected": ["us-east-1"]},
            {"id": "flags", "selected": ["Option 1", "Option 4"]},
            {"id": "notes", "selected": []},
        ]
        assert "*1.* *us-east-1*" in outcome_text(await updated(rig))


async def test_a_batch_modal_keeps_the_choices_made_in_the_message(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(*BATCH)
        await rig.posted()
        view = await open_modal(rig, 2, state=held(0, 2, kind="radio_buttons"))
        choice = next(b for b in view["blocks"] if b.get("block_id") == "hr.m0.choice")
        assert choice["element"]["initial_option"]["value"] == "2"
        values = {
            "hr.m0.choice": {"choice": {"type": "radio_buttons", "selected_option": {"value": "2"}}},
            "hr.m2.text": text_entry("Page me if p99 > 300 ms"),
        }
        await submit_modal(rig, view, values)
        assert wire(await asked.answer()) == [
            {"id": "region", "selected": ["ap-south-1"]},
            {"id": "flags", "selected": []},
            {"id": "notes", "selected": [], "custom": "Page me if p99 > 300 ms"},
        ]


async def test_a_long_label_round_trips_through_its_short_value(tmp_path: Path) -> None:
    long = "Roll back the deployment and page the database on-call engineer before retrying " * 2
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(item(options=["Carry on", long]))
        post = await rig.posted()
        button_ = post["blocks"][-2]["elements"][1]
        assert button_["value"] == "1" and len(button_["text"]["text"]) == 75
        await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": [long]}]


# --- who may answer, and who answered first ------------------------------------------------------------------------


async def test_someone_not_allowed_is_refused_privately_and_nothing_changes(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["U0BOB"])) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS, user="U0MALLORY"))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told == {
            "channel": "C0DEPLOY",
            "user": "U0MALLORY",
            "text": "You can't answer this question: only <@U0BOB> may. Nothing was changed.",
        }
        await rig.event(message_event("1", thread_ts=TS, user="U0MALLORY"))
        await rig.fake.wait_for("chat.postEphemeral", 2)
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]
        refused = await rig.ledger.store.history(kinds=["refused"])
        assert [(e.actor, e.detail["reason"], e.detail["via"]) for e in refused] == [
            ("U0MALLORY", "not-a-responder", "click"),
            ("U0MALLORY", "not-a-responder", "thread reply"),
        ]
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0BOB"))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["Yes (Recommended)"]}]
        assert "chat.update" in rig.fake.methods() or await rig.fake.wait_for("chat.update")


async def test_members_of_a_responder_user_group_may_answer(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["S0ONCALL"])) as rig:
        rig.fake.groups["S0ONCALL"] = ["U0ALICE"]
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["No"]}]
        assert rig.fake.calls_to("usergroups.users.list") == [{"usergroup": "S0ONCALL"}]


async def test_an_unauthorised_modal_submission_changes_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["U0BOB"])) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        ref = ModalRef(rig.question_id(), "C0DEPLOY", TS)
        response = await rig.click(view_submission(ref, {"hr.m0.text": text_entry("mine")}, user="U0MALLORY"))
        body = json.loads(response.body)
        assert body["response_action"] == "update" and "only <@U0BOB> may" in body["view"]["blocks"][0]["text"]["text"]
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]


async def test_when_two_people_click_at_once_exactly_one_wins(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        async with anyio.create_task_group() as clicks:
            clicks.start_soon(rig.click, block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0ALICE"))
            clicks.start_soon(rig.click, block_actions(button("hr.pick.0.1", "1"), ts=TS, user="U0BOB"))
        answer = await asked.answer()
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.answered_by in ("U0ALICE", "U0BOB")
        loser = "U0BOB" if record.answered_by == "U0ALICE" else "U0ALICE"
        assert told["user"] == loser
        assert told["text"].startswith(f"This question was already answered by <@{record.answered_by}> <!date^")
        assert wire(answer)[0]["selected"] == (["Yes (Recommended)"] if record.answered_by == "U0ALICE" else ["No"])
        kinds = [event.kind for event in await rig.ledger.store.history()]
        assert kinds.count("answered") == 1 and kinds.count("duplicate") == 1


async def test_a_late_modal_submission_is_told_who_answered(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        view = await open_modal(rig)
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0BOB"))
        await asked.answer()
        response = await submit_modal(rig, view, {"hr.m0.text": text_entry("too late")})
        body = json.loads(response.body)
        assert body["response_action"] == "update" and body["view"]["title"]["text"] == "Already answered"
        assert "already answered by <@U0BOB>" in body["view"]["blocks"][0]["text"]["text"]


# --- odd clicks and forms ---------------------------------------------------------------------------------------------


async def test_submit_with_nothing_chosen_says_what_to_do(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(*BATCH)
        await rig.posted()
        await rig.click(block_actions(button("hr.submit", "submit"), ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("Choose something before pressing Submit")


async def test_a_click_the_message_could_not_have_made_changes_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        assert (await rig.click(block_actions(button("hr.pick.0.7", "7"), ts=TS))).status == 200
        await anyio.sleep(0.05)
        assert (await rig.ledger.store.get_question(rig.question_id())).status == "pending"  # type: ignore[union-attr]
        assert rig.fake.methods() == ["chat.postMessage"]


async def test_other_on_an_answered_question_opens_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0BOB"))
        await asked.answer()
        await rig.click(block_actions(button("hr.text.0", "text"), ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("This question was already answered by <@U0BOB>")
        assert "views.open" not in rig.fake.methods()


async def test_when_slack_will_not_open_the_form_the_user_is_told(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        rig.fake.fail("views.open", "expired_trigger_id")
        await rig.click(block_actions(button("hr.text.0", "text"), ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"] == "Slack did not open the form; reply in the thread instead."


async def test_forms_that_are_not_ours_or_not_current_change_nothing(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        question_id = rig.question_id()
        foreign = await rig.click(view_submission(ModalRef(question_id, "C0DEPLOY", TS), {}, callback_id="other"))
        assert foreign.status == 404  # bolt: no listener for that callback_id
        elsewhere = await rig.click(view_submission(ModalRef(question_id, "C0DEPLOY", "1.0"), {}))
        assert "no longer open" in json.loads(elsewhere.body)["view"]["blocks"][0]["text"]["text"]
        bad_choice = {"hr.m0.choice": {"choice": {"type": "radio_buttons", "selected_option": {"value": "9"}}}}
        forged = await rig.click(view_submission(ModalRef(question_id, "C0DEPLOY", TS), bad_choice))
        assert (forged.status, forged.body) == (200, "")
        assert (await rig.ledger.store.get_question(question_id)).status == "pending"  # type: ignore[union-attr]


async def test_a_reply_in_a_thread_with_two_open_questions_is_asked_which_one_it_answers(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        rig.ask(item("Migrate the database?", options=["Yes", "No"]))
        await rig.posted(2)
        await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(channel="slack")) == 2)
        await rig.event(message_event("yes", thread_ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("2 questions are open here:\n1. Deploy v2 to production?\n2. Migrate")
        assert "like `1: yes`" in told["text"]
        assert await rig.ledger.store.count_questions("pending") == 2


async def test_numbered_lines_answer_several_open_questions_in_one_reply(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        first = rig.ask(YES_NO)
        await rig.posted()
        second = rig.ask(item("Migrate the database?", options=["Yes", "No"]))
        await rig.posted(2)
        await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(channel="slack")) == 2)
        await rig.event(message_event("<@U0BOT> 1: 2\n2: yes", thread_ts=TS))
        assert wire(await first.answer()) == [{"id": "q1", "selected": ["No"]}]
        assert wire(await second.answer()) == [{"id": "q1", "selected": ["Yes"]}]


async def test_a_reply_linking_to_one_questions_message_answers_that_question(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        second = rig.ask(item("Migrate the database?", options=["Yes", "No"]))
        reply_to_second = await rig.posted(2)
        await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(channel="slack")) == 2)
        delivered = (await rig.ledger.store.list_questions(channel="slack", newest_first=True))[0]
        ts = (await rig.ledger.store.get_delivery(delivered.id, "slack")).ref["ts"]  # type: ignore[union-attr]
        link = f"<https://example.slack.com/archives/C0DEPLOY/p{ts.replace('.', '')}>"
        assert reply_to_second["thread_ts"] == TS
        await rig.event(message_event(f"{link} no", thread_ts=TS))
        assert wire(await second.answer()) == [{"id": "q1", "selected": ["No"]}]
        assert await rig.ledger.store.count_questions("pending") == 1


async def test_a_plain_reply_in_a_dm_answers_the_question_asked_there(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=None, user="U0ALICE")) as rig:
        asked = rig.ask(YES_NO)
        post = await rig.posted()
        assert post["channel"] == "D0ALICE"
        await rig.until(lambda: sync_store(rig.ledger.store).get_delivery(rig.question_id(), "slack") is not None)
        await rig.event(message_event("2", channel="D0ALICE", thread_ts=None, channel_type="im"))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["No"]}]


async def test_a_user_groups_members_are_read_once_a_minute(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["S0ONCALL"])) as rig:
        rig.fake.groups["S0ONCALL"] = ["U0BOB"]
        rig.ask(YES_NO)
        await rig.posted()
        for _ in range(2):
            await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0MALLORY"))
        await rig.fake.wait_for("chat.postEphemeral", 2)
        assert len(rig.fake.calls_to("usergroups.users.list")) == 1


async def test_clicks_at_the_same_moment_share_one_read_of_the_user_group(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["S0ONCALL"])) as rig:
        rig.fake.groups["S0ONCALL"] = ["U0BOB"]
        rig.ask(YES_NO)
        await rig.posted()
        release = rig.fake.stall("usergroups.users.list")
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0MALLORY"))
        await rig.fake.wait_for("usergroups.users.list")  # the first click's read is in flight
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS, user="U0EVE"))
        with anyio.move_on_after(0.3):  # time for a second read to reach Slack, were it made
            await rig.fake.wait_for("usergroups.users.list", 2)
        release.set()
        await rig.fake.wait_for("chat.postEphemeral", 2)
        assert len(rig.fake.calls_to("usergroups.users.list")) == 1


async def test_when_the_user_group_cannot_be_read_the_click_is_refused(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(responders=["S0ONCALL"])) as rig:
        rig.fake.fail("usergroups.users.list", "missing_scope")
        rig.ask(YES_NO)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("You can't answer this question: only <!subteam^S0ONCALL> may.")


async def test_thread_replies_find_questions_asked_before_and_after_the_first_reply(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        await rig.event(message_event("unrelated chatter", thread_ts="1600000000.000001"))
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.until(lambda: sync_store(rig.ledger.store).get_delivery(rig.question_id(), "slack") is not None)
        await rig.restart_memory()  # as after a restart
        await rig.event(message_event("no", thread_ts=TS))
        assert wire(await asked.answer()) == [{"id": "q1", "selected": ["No"]}]
        again = rig.ask(YES_NO)
        post = await rig.posted(2)
        assert post["thread_ts"] == TS
        await rig.until(lambda: len(sync_store(rig.ledger.store).list_questions(status="pending")) == 1)
        second = (await rig.ledger.store.list_questions(status="pending"))[0].id
        await rig.until(lambda: sync_store(rig.ledger.store).get_delivery(second, "slack") is not None)
        await rig.event(message_event("yes", thread_ts=TS))
        assert wire(await again.answer()) == [{"id": "q1", "selected": ["Yes (Recommended)"]}]
