"""Answering in Teams end to end: cards posted to the local Teams, presses and thread replies posted back to the
channel's /teams/messages with real tokens, the real seam and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from microsoft_agents.activity import AdaptiveCardInvokeResponse

from bot.teams.cards import INPUT_CHOICE, INPUT_WORDS
from core import AskUserQuestionIntent, AskUserQuestionItem, AskUserQuestionOption
from tests.bot.fakes import sync_store

from .fake_teams import ALICE, BOB, MALLORY, Person
from .questions import action, actions, checks, choice, free, many, plan, texts
from .rig import TeamsRig, teams_rig

pytestmark = pytest.mark.anyio


async def press(rig: TeamsRig, card_id: str, who: Person, title: str, **inputs: Any) -> tuple[int, Any]:
    data = dict(action(rig.fake.card(card_id), title)["data"]) | inputs
    return await rig.fake.send(rig.fake.execute(card_id, who, data))


async def test_one_press_answers_a_single_select_question(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        status, body = await press(rig, card_id, ALICE, "Staging")
        assert status == 200
        answer = await asked.answer()
        assert [(item.id, item.selected) for item in answer.answers] == [("env", ["Staging"])]
        invoke = AdaptiveCardInvokeResponse.model_validate(body)
        assert invoke.status_code == 200 and invoke.type == "application/vnd.microsoft.card.adaptive"
        assert isinstance(invoke.value, dict)
        assert "Answered** by Alice Archer" in texts(invoke.value)


async def test_the_card_holds_the_question_verbatim_and_its_options_as_actions(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        rig.ask(choice(question="Deploy *where*? <at>everyone</at>"))
        card = rig.fake.card(await rig.posted())
        assert card["version"] == "1.5"
        assert "Deploy *where*? <at>everyone</at>" in texts(card).split("\n")
        assert [(a["type"], a["title"]) for a in actions(card)] == [
            ("Action.Execute", "Staging"),
            ("Action.Execute", "Production"),
            ("Action.ShowCard", "Other…"),
        ]
        assert "entities" not in rig.fake.posted()[0]  # nothing the agent wrote can mention anyone


async def test_the_answered_card_shows_who_what_and_when_for_everyone_without_actions(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        await press(rig, card_id, ALICE, "Production")
        await asked.answer()
        await rig.fake.wait_for("PUT")
        card = rig.fake.card(card_id)
        assert "actions" not in card
        shown = texts(card)
        assert "→ **Production**" in shown and "Answered** by Alice Archer · " in shown and " UTC" in shown
        assert ALICE.id not in shown and ALICE.aad not in shown


async def test_more_than_five_options_are_a_choice_set_with_submit(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(many(8))
        card_id = await rig.posted()
        card = rig.fake.card(card_id)
        (field,) = [item for item in card["body"] if item["type"] == "Input.ChoiceSet"]
        assert len(field["choices"]) == 8 and len(actions(card)) <= 6
        await press(rig, card_id, ALICE, "Submit", **{INPUT_CHOICE: "5"})
        assert (await asked.answer()).answers[0].selected == ["Region 6, west"]


async def test_multi_select_is_a_choice_set_whose_values_hold_no_commas(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(checks())
        card_id = await rig.posted()
        (field,) = [item for item in rig.fake.card(card_id)["body"] if item["type"] == "Input.ChoiceSet"]
        assert field["isMultiSelect"] is True
        assert [c["title"] for c in field["choices"]] == ["Unit tests", "Lint, strict", "Docs"]
        assert all("," not in c["value"] for c in field["choices"])
        await press(rig, card_id, ALICE, "Submit", **{INPUT_CHOICE: "1,2"})
        assert (await asked.answer()).answers[0].selected == ["Lint, strict", "Docs"]


async def test_other_opens_a_text_field_whose_words_are_the_answer(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        other = action(rig.fake.card(card_id), "Other…")
        assert other["card"]["body"][0]["type"] == "Input.Text"
        await press(rig, card_id, ALICE, "Submit", **{INPUT_WORDS: "Canary first"})
        item = (await asked.answer()).answers[0]
        assert (item.selected, item.custom) == ([], "Canary first")


async def test_a_plan_review_shows_the_plan_with_approve_and_request_changes(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(plan())
        card_id = await rig.posted()
        card = rig.fake.card(card_id)
        assert "1. Back up the database\n2. Run the migration" in texts(card)
        assert [a["title"] for a in actions(card)] == ["Approve", "Request changes…"]
        await press(rig, card_id, ALICE, "Submit", **{INPUT_WORDS: "Back up twice"})
        assert (await asked.answer()).answers[0].custom == "Back up twice"


async def test_an_empty_text_answer_is_refused_privately(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(free())
        card_id = await rig.posted()
        _, body = await press(rig, card_id, ALICE, "Submit", **{INPUT_WORDS: "   "})
        assert body["type"] == "application/vnd.microsoft.activity.message" and "empty" in body["value"]
        assert not asked.done.is_set()


@pytest.mark.parametrize("text", ["2", "<at>handraise</at> 2", "<p><at>handraise</at>&nbsp;2</p>", "production"])
async def test_a_thread_reply_naming_option_two_picks_it(tmp_path: Path, text: str) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        status, _ = await rig.fake.send(rig.fake.reply(card_id, ALICE, text))
        assert status == 200
        assert (await asked.answer()).answers[0].selected == ["Production"]


async def test_other_words_in_the_thread_are_the_persons_own_answer(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        await rig.fake.send(rig.fake.reply(card_id, ALICE, "<at>handraise</at> neither, wait for the freeze"))
        assert (await asked.answer()).answers[0].custom == "neither, wait for the freeze"


async def test_an_older_clients_action_submit_answers_too(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        data = action(rig.fake.card(card_id), "Staging")["data"]
        status, body = await rig.fake.send(rig.fake.submit(card_id, ALICE, data))
        assert (status, body) == (200, None)
        assert (await asked.answer()).answers[0].selected == ["Staging"]
        await rig.fake.wait_for("PUT")
        assert "actions" not in rig.fake.card(card_id)


async def test_someone_not_among_the_responders_is_refused_privately_and_nothing_changes(tmp_path: Path) -> None:
    async with teams_rig(tmp_path, {"responders": [ALICE.email]}) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        status, body = await press(rig, card_id, MALLORY, "Staging")
        assert status == 200
        assert body["type"] == "application/vnd.microsoft.activity.message"
        assert "Only alice@example.org may answer" in body["value"]
        assert not asked.done.is_set() and rig.fake.updates() == []
        events = sync_store(rig.ledger.store).history(question_id=rig.question_id())
        assert [(e.kind, e.actor) for e in events if e.kind == "refused"] == [("refused", MALLORY.email)]


@pytest.mark.parametrize("entry", [BOB.aad, BOB.email.upper(), "@example.org"])
async def test_responders_are_matched_by_object_id_email_or_domain(tmp_path: Path, entry: str) -> None:
    async with teams_rig(tmp_path, {"responders": [entry]}) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        await press(rig, card_id, BOB, "Staging")
        answer = await asked.answer()
        assert answer.answers[0].selected == ["Staging"]


async def test_a_repeated_activity_is_answered_once_with_no_audit_row(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        data = action(rig.fake.card(card_id), "Staging")["data"]
        activity = rig.fake.execute(card_id, ALICE, data)
        first = await rig.fake.send(activity)
        again = await rig.fake.send(activity)
        assert first[0] == again[0] == 200
        assert again[1]["type"] == "application/vnd.microsoft.card.adaptive"
        await asked.answer()
        kinds = [e.kind for e in sync_store(rig.ledger.store).history(question_id=rig.question_id())]
        assert kinds.count("answered") == 1 and "duplicate" not in kinds and "refused" not in kinds


async def test_a_late_press_changes_nothing_and_shows_the_answered_card(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        stale = action(rig.fake.card(card_id), "Production")["data"]
        await press(rig, card_id, ALICE, "Staging")
        await asked.answer()
        _, body = await rig.fake.send(rig.fake.execute(card_id, BOB, stale))
        assert "Answered** by Alice Archer" in texts(body["value"])
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.answer is not None
        assert record.answer.answers[0].selected == ["Staging"]


async def test_several_questions_are_answered_one_by_one_in_the_same_card(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice(), free())
        card_id = await rig.posted()
        assert "· 1 of 2" in texts(rig.fake.card(card_id))
        _, body = await press(rig, card_id, ALICE, "Staging")
        assert "· 2 of 2" in texts(body["value"])
        await rig.fake.wait_for("PUT")
        assert "✓ 1. Deploy where? — **Staging**" in texts(rig.fake.card(card_id))
        await rig.fake.send(rig.fake.reply(card_id, BOB, "Aurora"))
        answer = await asked.answer()
        assert [(i.selected, i.custom) for i in answer.answers] == [(["Staging"], None), ([], "Aurora")]
        assert len(rig.fake.posted()) == 1


async def test_two_people_pressing_at_once_one_wins_and_the_other_is_a_duplicate(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        staging = dict(action(rig.fake.card(card_id), "Staging")["data"])
        production = dict(action(rig.fake.card(card_id), "Production")["data"])
        results: list[tuple[int, Any]] = []

        async def send(who: Person, data: dict[str, Any]) -> None:
            results.append(await rig.fake.send(rig.fake.execute(card_id, who, data)))

        async with anyio.create_task_group() as group:
            group.start_soon(send, ALICE, staging)
            group.start_soon(send, BOB, production)
        answer = await asked.answer()
        assert [status for status, _ in results] == [200, 200]
        kinds = [e.kind for e in sync_store(rig.ledger.store).history(question_id=rig.question_id())]
        assert kinds.count("answered") == 1 and kinds.count("duplicate") == 1
        assert answer.answers[0].selected in (["Staging"], ["Production"])


async def test_someone_teams_cannot_find_among_the_members_is_told_and_nothing_changes(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(choice())
        card_id = await rig.posted()
        stranger = Person("29:1stranger", "Stranger", "s@example.net", "dddddddd-0000-4000-8000-000000000004")
        _, body = await press(rig, card_id, stranger, "Staging")
        assert body["type"] == "application/vnd.microsoft.activity.message" and "who you are" in body["value"]
        assert not asked.done.is_set()


def permission() -> AskUserQuestionItem:
    options = [AskUserQuestionOption(label="Allow"), AskUserQuestionOption(label="Deny…")]
    intent = AskUserQuestionIntent(kind="plan-review", approve="Allow", reject="Deny…")
    return AskUserQuestionItem(id="perm", question="Allow Bash?", detail="rm -rf build", options=options, intent=intent)


async def test_the_reject_option_is_the_words_field_with_the_reason_optional(tmp_path: Path) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(permission())
        card_id = await rig.posted()
        card = rig.fake.card(card_id)
        assert [(a["type"], a["title"]) for a in actions(card)] == [
            ("Action.Execute", "Allow"),
            ("Action.ShowCard", "Deny…"),
        ]
        (field,) = action(card, "Deny…")["card"]["body"]
        assert field["label"] == "Deny… — say why (optional)" and not field.get("isRequired")
        await press(rig, card_id, ALICE, "Submit", **{INPUT_WORDS: ""})
        assert (await asked.answer()).answers[0].selected == ["Deny…"]


@pytest.mark.parametrize(
    ("text", "selected", "custom"), [("Deny: too risky", [], "too risky"), ("deny", ["Deny…"], None)]
)
async def test_a_thread_reply_naming_the_reject_option_denies(
    tmp_path: Path, text: str, selected: list[str], custom: str | None
) -> None:
    async with teams_rig(tmp_path) as rig:
        asked = rig.ask(permission())
        card_id = await rig.posted()
        await rig.fake.send(rig.fake.reply(card_id, ALICE, text))
        item = (await asked.answer()).answers[0]
        assert (item.selected, item.custom) == (selected, custom)
