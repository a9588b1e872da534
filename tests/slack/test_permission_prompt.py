"""A coding agent's permission prompt in Slack: three buttons (Allow, Deny…, Always allow), and Deny… opens the form
for the person's reason. What comes back is read by the hook's own `decision_of`, so these show what the agent gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, DENY, Decision, Permission, decision_of, question
from bot.slack.ids import ModalRef
from bot.slack.modal import render_answer_modal
from bot.slack.render import render_question
from core import AskUserQuestionItem

from .blockkit import check_view
from .payloads import block_actions, button, message_event, text_entry
from .records import item, record
from .rig import SlackRig, slack_rig
from .test_answering import TS, open_modal, submit_modal

pytestmark = pytest.mark.anyio

PERMISSION = Permission(
    agent="codex", project="billing-api", tool="Bash", kind="shell", request="git push", detail="git push"
)
PROMPT = AskUserQuestionItem.model_validate(question(PERMISSION))


def buttons(post: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in post["blocks"] if b["type"] == "actions" for e in b["elements"] if e["type"] == "button"]


async def decided(rig: SlackRig, asked: Any) -> Decision | None:
    return decision_of((await asked.answer()).to_wire(), None)


async def test_the_prompt_has_exactly_three_buttons_and_deny_opens_the_form(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(PROMPT)
        shown = buttons(await rig.posted())
        assert [b["text"]["text"] for b in shown] == [ALLOW, DENY, ALWAYS]
        assert [b["action_id"] for b in shown] == ["hr.pick.0.0", "hr.text.0", "hr.pick.0.2"]
        assert [b.get("style") for b in shown] == ["primary", None, None]
        view = await open_modal(rig)
        assert view["title"]["text"] == DENY and view["submit"]["text"] == "Deny"
        (field,) = [block for block in view["blocks"] if block["type"] == "input"]
        assert field["label"]["text"] == "Deny… — say why (optional)" and field["optional"] is True


async def test_deny_with_words_is_a_deny_carrying_them(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        await rig.posted()
        view = await open_modal(rig)
        await submit_modal(rig, view, {"hr.m0.text": text_entry("  not before the release review \n")})
        assert await decided(rig, asked) == Decision("deny", "not before the release review")


@pytest.mark.parametrize("typed", [None, "", "   \n "])
async def test_deny_sent_without_words_is_a_plain_deny(tmp_path: Path, typed: str | None) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        await rig.posted()
        view = await open_modal(rig)
        response = await submit_modal(rig, view, {"hr.m0.text": text_entry(typed)})
        assert response.status == 200 and "errors" not in (response.body or "")
        assert (await asked.answer()).to_wire()["answers"] == [{"id": "permission", "selected": [DENY]}]
        assert await decided(rig, asked) == Decision("deny", "Denied through handraise.")


async def test_allow_is_one_click(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        assert await decided(rig, asked) == Decision("allow", "Allowed through handraise.")


async def test_a_deny_button_click_forged_as_a_pick_is_still_a_plain_deny(tmp_path: Path) -> None:
    """The message has no pick button for Deny…, but the option is still one of the question's: a forged pick of it
    denies, as the option says, and never allows."""
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.1", "1"), ts=TS))
        assert await decided(rig, asked) == Decision("deny", "Denied through handraise.")


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        ("Deny: not on a Friday", Decision("deny", "not on a Friday")),
        ("deny", Decision("deny", "Denied through handraise.")),
        ("Deny…\nthe tests fail on main", Decision("deny", "the tests fail on main")),
        ("wait for Bob", Decision("deny", "wait for Bob")),
        ("1", Decision("allow", "Allowed through handraise.")),
    ],
)
async def test_a_thread_reply_denies_with_or_without_a_reason(tmp_path: Path, reply: str, decision: Decision) -> None:
    async with slack_rig(tmp_path) as rig:
        asked = rig.ask(PROMPT)
        await rig.posted()
        await rig.event(message_event(reply, thread_ts=TS))
        assert await decided(rig, asked) == decision


def test_in_a_batch_the_words_button_and_field_are_named_for_the_reject_option() -> None:
    batch = record(item("Which region?", id="region", options=["eu", "us"]), PROMPT)
    texts = [
        e["text"]["text"]
        for b in render_question(batch).blocks
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == "hr.text.1"
    ]
    assert texts == [DENY]
    view = render_answer_modal(batch, 1, ModalRef(batch.id, "C0DEPLOY", TS, None))
    check_view(view)
    labels = [b["label"]["text"] for b in view["blocks"] if b.get("block_id") == "hr.m1.text"]
    assert labels == ["Deny… — say why (optional)"] and view["title"]["text"] == DENY
