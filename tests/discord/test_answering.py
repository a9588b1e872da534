"""Answering in Discord end to end: the channel's own client on the fake Discord's REST API and Gateway, the real
seam and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.permissions.prompt import Permission, decision_of
from bot.permissions.prompt import question as permission_question
from core import AskUserQuestionAnswer, AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption
from tests.bot.fakes import sync_store

from .fake_discord import EPHEMERAL
from .rig import ALICE, BOB, MALLORY, REVIEWERS, DiscordRig, discord_rig

pytestmark = pytest.mark.anyio


def choice(*labels: str, **fields: Any) -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label=label) for label in labels or ("Staging", "Production")]
    return AskUserQuestionItem.model_validate({"id": "env", "question": "Deploy where?", "options": options} | fields)


def checks() -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label=label) for label in ("Unit tests", "Lint", "Docs")]
    return AskUserQuestionItem(id="checks", question="Which checks?", options=options, multi_select=True)


def plan(detail: str = "1. Back up the database\n2. Run the migration") -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Approve"), AskUserQuestionOption(label="Request changes")]
    return AskUserQuestionItem(
        id="plan",
        question="Approve the migration plan?",
        detail=detail,
        options=options,
        intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
    )


def control(rig: DiscordRig, message_id: str, label: str) -> str:
    """The custom id of the button whose label contains `label`."""
    for item in rig.fake.buttons(message_id):
        if label in (item.get("label") or ""):
            return item["custom_id"]
    raise AssertionError(f"no control {label!r} in {rig.fake.buttons(message_id)}")


async def callback(rig: DiscordRig, interaction: str) -> dict[str, Any]:
    await rig.fake.until(lambda: rig.fake.callbacks(interaction))
    return rig.fake.callbacks(interaction)[0]


async def test_a_button_answers_and_the_message_shows_who_what_and_when_without_controls(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        assert [b["label"] for b in rig.fake.buttons(message)] == ["Staging", "Production", "Other…"]
        pressed = await rig.fake.click(message, control(rig, message, "Production"), ALICE)
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Production"]
        assert (await callback(rig, pressed))["type"] == 6
        await rig.fake.wait_for("PATCH /channels")
        shown = rig.message(message)
        assert shown["components"] == []
        assert "**Production**" in shown["content"] and f"Answered** by <@{ALICE['id']}>" in shown["content"]
        assert "<t:" in shown["content"]


async def test_questions_of_one_agent_go_to_one_public_thread_posted_once(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        first = await rig.sent()
        rig.ask(choice(id="again", question="And the region?"))
        second = await rig.sent(2)
        (thread,) = rig.fake.threads()
        assert thread["type"] == 11 and thread["name"] == "deploy-bot"
        assert rig.message(first)["channel_id"] == rig.message(second)["channel_id"] == thread["id"]
        assert rig.message(first)["content"].count("Deploy where?") == 1
        assert len(rig.fake.calls_to("POST /channels")) == 3  # one thread, two messages: no starter, no repeat
        assert all(
            call.body["allowed_mentions"] == {"parse": []}
            for call in rig.fake.calls_to("POST /channels/")
            if "/messages" in call.path
        )


async def test_someone_else_is_refused_privately_and_nothing_changes(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        message = await rig.sent()
        pressed = await rig.fake.click(message, control(rig, message, "Staging"), MALLORY)
        refusal = await callback(rig, pressed)
        assert refusal["type"] == 4 and refusal["data"]["flags"] == EPHEMERAL
        assert "Only" in refusal["data"]["content"] and "Nothing was changed" in refusal["data"]["content"]
        assert sync_store(rig.ledger.store).list_questions(limit=1)[0].status == "pending"
        assert not rig.fake.calls_to("PATCH")


async def test_a_member_of_a_responder_role_may_answer(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        await rig.fake.click(message, control(rig, message, "Staging"), BOB, roles=[REVIEWERS])
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Staging"]


async def test_an_interaction_delivered_twice_is_answered_once(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        pressed = await rig.fake.click(message, control(rig, message, "Staging"), ALICE)
        await rig.fake.redeliver(pressed)
        await asked.answer()
        await rig.fake.wait_for("PATCH /channels")
        assert len(rig.fake.callbacks(pressed)) == 1
        assert len([c for c in rig.fake.calls if c.path.startswith(f"/interactions/{pressed}")]) == 1
        kinds = [event.kind for event in await rig.ledger.store.history(question_id=rig.question_id())]
        assert kinds.count("answered") == 1 and "duplicate" not in kinds and "refused" not in kinds


async def test_multi_select_keeps_the_pick_until_submit(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        message = await rig.sent()
        (select,) = [item for item in rig.fake.buttons(message) if item["type"] == 3]
        assert select["max_values"] == 3
        picked = await rig.fake.choose(message, select["custom_id"], ["0", "2"], ALICE)
        assert (await callback(rig, picked))["type"] == 6
        assert sync_store(rig.ledger.store).list_questions(limit=1)[0].status == "pending"
        await rig.fake.click(message, control(rig, message, "Submit"), ALICE)
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Unit tests", "Docs"]


async def test_a_pick_is_kept_per_person_and_someone_elses_submit_needs_their_own(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        message = await rig.sent()
        (select,) = [item for item in rig.fake.buttons(message) if item["type"] == 3]
        await callback(rig, await rig.fake.choose(message, select["custom_id"], ["1"], ALICE))
        refused = await rig.fake.click(message, control(rig, message, "Submit"), BOB)
        assert (await callback(rig, refused))["data"]["flags"] == EPHEMERAL  # Bob picked nothing himself
        await rig.fake.click(message, control(rig, message, "Submit"), ALICE)
        assert (await asked.answer()).answers[0].selected == ["Lint"]


async def test_other_on_a_multi_select_answers_the_pick_with_the_words(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        message = await rig.sent()
        (select,) = [item for item in rig.fake.buttons(message) if item["type"] == 3]
        await callback(rig, await rig.fake.choose(message, select["custom_id"], ["2", "0"], ALICE))
        opened = await rig.fake.click(message, control(rig, message, "Other…"), ALICE)
        modal = (await callback(rig, opened))["data"]
        await rig.fake.submit_modal(message, modal["custom_id"], {"words": "and the e2e suite"}, ALICE)
        (item,) = (await asked.answer()).answers
        assert item.selected == ["Unit tests", "Docs"] and item.custom == "and the e2e suite"


async def test_other_on_a_multi_select_with_nothing_picked_is_the_words_alone(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        message = await rig.sent()
        opened = await rig.fake.click(message, control(rig, message, "Other…"), ALICE)
        modal = (await callback(rig, opened))["data"]
        await rig.fake.submit_modal(message, modal["custom_id"], {"words": "only the smoke test"}, ALICE)
        (item,) = (await asked.answer()).answers
        assert item.selected == [] and item.custom == "only the smoke test"


async def test_other_opens_a_modal_first_and_its_words_answer(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        opened = await rig.fake.click(message, control(rig, message, "Other…"), ALICE)
        modal = await callback(rig, opened)
        assert modal["type"] == 9 and len(modal["data"]["title"]) <= 45
        await rig.fake.submit_modal(message, modal["data"]["custom_id"], {"words": "Canary first"}, ALICE)
        answer = await asked.answer()
        assert answer.answers[0].custom == "Canary first"


async def test_more_than_five_options_are_a_select(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        labels = [f"Region {n}" for n in range(7)]
        asked = rig.ask(choice(*labels))
        message = await rig.sent()
        (select,) = [item for item in rig.fake.buttons(message) if item["type"] == 3]
        assert select["max_values"] == 1 and len(select["options"]) == 7
        await rig.fake.choose(message, select["custom_id"], ["5"], ALICE)
        assert (await asked.answer()).answers[0].selected == ["Region 5"]


async def test_a_long_label_is_cut_on_the_button_but_answered_in_full(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        long = "Deploy to the production cluster in eu-west-1 after the canary has been healthy for an hour"
        asked = rig.ask(choice(long, "Wait"))
        message = await rig.sent()
        label = rig.fake.buttons(message)[0]["label"]
        assert len(label) == 80 and label.endswith("…") and long.startswith(label[:-1])
        await rig.fake.click(message, rig.fake.buttons(message)[0]["custom_id"], ALICE)
        assert (await asked.answer()).answers[0].selected == [long]


async def test_a_plan_review_approves_or_requests_changes_in_a_modal(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(plan())
        message = await rig.sent()
        assert [b["label"] for b in rig.fake.buttons(message)] == ["Approve", "Request changes…"]
        assert "> 1\\. Back up" in rig.message(message)["content"] or "> 1. Back up" in rig.message(message)["content"]
        opened = await rig.fake.click(message, control(rig, message, "Request changes"), ALICE)
        modal = await callback(rig, opened)
        assert modal["type"] == 9 and modal["data"]["title"] == "Request changes"
        await rig.fake.submit_modal(message, modal["data"]["custom_id"], {"words": "Test the backup first"}, ALICE)
        assert (await asked.answer()).answers[0].custom == "Test the backup first"


def permission_prompt() -> AskUserQuestionItem:
    permission = Permission(
        agent="codex", project="shop", tool="Bash", kind="shell", request="rm -rf build", detail="rm -rf build"
    )
    return AskUserQuestionItem.model_validate(permission_question(permission))


def decided(answer: AskUserQuestionAnswer) -> tuple[str, str] | None:
    decision = decision_of(answer.to_wire(), None)
    return None if decision is None else (decision.behavior, decision.message)


@pytest.mark.parametrize(
    ("words", "expected"),
    [("Not on a Friday", ("deny", "Not on a Friday")), ("", ("deny", "Denied through handraise."))],
)
async def test_a_permission_prompts_deny_asks_why_in_a_modal_and_no_words_is_a_plain_deny(
    tmp_path: Path, words: str, expected: tuple[str, str]
) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(permission_prompt())
        message = await rig.sent()
        assert [b["label"] for b in rig.fake.buttons(message)] == ["Allow", "Always allow", "Deny…"]
        opened = await rig.fake.click(message, control(rig, message, "Deny…"), ALICE)
        modal = await callback(rig, opened)
        text_input = modal["data"]["components"][0]["components"][0]
        assert (modal["data"]["title"], text_input["required"]) == ("Deny…", False)
        assert text_input["label"] == "Deny… — say why (optional)"
        await rig.fake.submit_modal(message, modal["data"]["custom_id"], {"words": words}, ALICE)
        assert decided(await asked.answer()) == expected


async def test_a_long_plan_goes_before_the_buttons_in_messages_under_2000(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        steps = "\n".join(f"{n}. Step {n}: " + "do the careful thing " * 6 for n in range(1, 40))
        asked = rig.ask(plan(steps))
        message = await rig.sent()
        posts = [c.body["content"] for c in rig.fake.calls_to("POST /channels/") if "content" in c.body]
        assert len(posts) >= 3 and posts[-1] == rig.message(message)["content"]
        assert all(len(text) <= 2000 for text in posts)
        assert "Step 39" in "".join(posts[:-1]) and "Step 39" not in posts[-1]
        await rig.fake.click(message, control(rig, message, "Approve"), ALICE)
        assert (await asked.answer()).answers[0].selected == ["Approve"]


async def test_a_thread_reply_with_a_number_picks_that_option(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        thread = rig.message(message)["channel_id"]
        await rig.fake.post(thread, MALLORY, "2")  # someone else: answers nothing
        await rig.fake.post(thread, ALICE, "2")
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Production"]
        assert sync_store(rig.ledger.store).list_questions(limit=1)[0].answered_by == ALICE["id"]


async def test_other_words_in_the_thread_are_the_persons_own_answer(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        await rig.fake.post(rig.message(message)["channel_id"], ALICE, "neither, roll back")
        assert (await asked.answer()).answers[0].custom == "neither, roll back"


async def test_a_batch_moves_on_to_the_next_question_in_the_same_message(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice(), checks())
        message = await rig.sent()
        pressed = await rig.fake.click(message, control(rig, message, "Staging"), ALICE)
        moved = await callback(rig, pressed)
        assert moved["type"] == 7 and "Which checks?" in moved["data"]["content"]
        (select,) = [item for item in rig.fake.buttons(message) if item["type"] == 3]
        await rig.fake.choose(message, select["custom_id"], ["1"], ALICE)
        await rig.fake.click(message, control(rig, message, "Submit"), ALICE)
        answer = await asked.answer()
        assert [item.selected for item in answer.answers] == [["Staging"], ["Lint"]]


async def test_a_late_click_is_acknowledged_privately_without_an_edit(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        message = await rig.sent()
        staging = control(rig, message, "Staging")
        await rig.fake.click(message, staging, ALICE)
        await asked.answer()
        await rig.fake.wait_for("PATCH /channels")
        late = await rig.fake.click(message, staging, BOB, roles=[REVIEWERS])
        notice = await callback(rig, late)
        assert notice["type"] == 4 and notice["data"]["flags"] == EPHEMERAL
        assert "already answered" in notice["data"]["content"]
        assert len(rig.fake.calls_to("PATCH /channels")) == 1


async def test_cancelled_and_expired_questions_say_so_and_lose_their_controls(tmp_path: Path) -> None:
    async with discord_rig(tmp_path, *[]) as rig:
        from core import AbortController

        controller = AbortController()
        rig.ask(choice(), signal=controller.signal)
        message = await rig.sent()
        controller.abort()
        await rig.fake.wait_for("PATCH /channels")
        assert "Cancelled" in rig.message(message)["content"] and rig.message(message)["components"] == []


async def test_chatter_elsewhere_costs_the_store_nothing(tmp_path: Path) -> None:
    from .fake_discord import CHANNEL_ID

    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        message = await rig.sent()
        await rig.fake.post(CHANNEL_ID, ALICE, "lunch?")  # not a thread with a question
        await rig.fake.post(rig.message(message)["channel_id"], MALLORY, "2")  # not a responder
        chatter = await rig.fake.post(rig.message(message)["channel_id"], ALICE, "1")
        await rig.until(lambda: sync_store(rig.ledger.store).count_questions("answered") == 1)
        seen = [key for key in rig.channel._seen if key.startswith("message:")]
        assert seen == [f"message:{chatter}"]


async def test_when_the_agents_thread_was_deleted_a_new_one_is_opened(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        rig.ask(choice())
        first = await rig.sent()
        old = rig.message(first)["channel_id"]
        rig.fake.delete_channel(old)
        asked = rig.ask(choice(id="again", question="And now?"))
        await rig.fake.until(lambda: len(rig.fake.threads()) == 1 and rig.fake.threads()[0]["id"] != old)
        message = await rig.sent()  # the first question's message is gone with its thread
        assert rig.message(message)["channel_id"] == rig.fake.threads()[0]["id"]
        await rig.fake.click(message, control(rig, message, "Staging"), ALICE)
        assert (await asked.answer()).answers[0].selected == ["Staging"]
