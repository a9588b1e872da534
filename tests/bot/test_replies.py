"""The reply half of the base: one call finds the question, checks who answers, reads, records, and says what became
of the reply. Every channel relies on these rules, so they are tested once, here, with a recording channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.channels.replies import (
    Accepted,
    Answer,
    Ended,
    NotAllowed,
    Noted,
    Replies,
    Unmatched,
    Unreadable,
    is_allowed,
)
from bot.errors import BotErrorCode, HandraiseError
from bot.questions.routing import Router
from bot.settings.tables import Subscription
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

from .fakes import RecordingChannel, make_ledger, sync_store

pytestmark = pytest.mark.anyio

DEPLOY = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
)
NOTES = AskUserQuestionItem(id="notes", question="Anything else?")


class GroupChannel(RecordingChannel):
    """A channel whose `S…` responders are groups, like Slack's user groups."""

    async def identity(self, person: str) -> str:
        return {"U0ALICE": "alice@example.org"}.get(person, person)

    async def members(self, entry: str) -> frozenset[str] | None:
        return {"S0ONCALL": frozenset({"U0ALICE"})}.get(entry) if entry.startswith("S") else None


def pick(label: str) -> dict[str, AskUserQuestionAnswerItem]:
    return {"deploy": AskUserQuestionAnswerItem(id="deploy", selected=[label])}


def rig(
    tmp_path: Path, *questions: AskUserQuestionItem, responders: list[str] | None = None, approvals: int = 1
) -> tuple[Replies, QuestionRecord]:
    ledger, _ = make_ledger(tmp_path)
    channel = GroupChannel("chat")
    router = Router(["chat"], {"chat": [Subscription(responders=responders or [], approvals=approvals)]})
    replies = Replies(channel, ledger, router)
    record = QuestionRecord(questions=list(questions) or [DEPLOY])
    sync_store(ledger.store).create_question(record)
    sync_store(ledger.store).add_delivery(record.id, "chat", "K1", {})
    return replies, record


def read_as(answer: Answer | None):
    def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
        return answer

    return read


def fail_with(problem: Exception):
    def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
        raise problem

    return read


async def test_an_answer_from_anyone_is_accepted_when_the_route_names_no_responders(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    outcome = await replies.answer("K1", by="U0ANYONE", how="click", read=read_as(Answer(pick("No"))))
    assert isinstance(outcome, Accepted) and outcome.complete
    assert (outcome.record.answered_by, outcome.record.answered_via) == ("U0ANYONE", "chat")


async def test_a_reply_to_no_delivery_is_ended_with_no_question(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    read = read_as(Answer(pick("No")))
    assert await replies.answer("K9", by="U0A", how="reply", read=read, expected=False) == Ended(None)
    assert await replies.answer("K9", by="U0A", how="click", read=read) == Unmatched(None, "click", "K9")


async def test_a_reply_naming_another_question_than_its_delivery_finds_nothing(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    outcome = await replies.answer("K1", by="U0A", how="form", read=read_as(None), question_id="q_other")
    assert isinstance(outcome, Ended) and outcome.record is None


async def test_someone_not_listed_is_refused_and_the_refusal_is_audited(tmp_path: Path) -> None:
    replies, record = rig(tmp_path, responders=["U0BOB"])
    outcome = await replies.answer("K1", by="U0MALLORY", how="click", read=read_as(Answer(pick("No"))))
    assert outcome == NotAllowed(record, "U0MALLORY", ("U0BOB",))
    (event,) = await replies.ledger.store.history(kinds=["refused"])
    assert (event.actor, event.detail) == ("U0MALLORY", {"reason": "not-a-responder", "via": "click"})
    assert (await replies.ledger.store.get_question(record.id)).status == "pending"  # type: ignore[union-attr]


async def test_a_member_of_a_responder_group_may_answer(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, responders=["S0ONCALL"])
    outcome = await replies.answer("K1", by="U0ALICE", how="click", read=read_as(Answer(pick("Yes"))))
    assert isinstance(outcome, Accepted)


async def test_a_reader_that_cannot_read_makes_the_reply_unreadable_and_audits_it(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    problem = HandraiseError("reply with a number from 1 to 2", BotErrorCode.UNREADABLE_REPLY)
    outcome = await replies.answer("K1", by="U0A", how="thread reply", read=fail_with(problem))
    assert isinstance(outcome, Unreadable) and outcome.reason == "reply with a number from 1 to 2"
    assert outcome.error is problem
    assert [e.detail["reason"] for e in await replies.ledger.store.history(kinds=["refused"])] == ["unreadable"]


async def test_an_answer_that_does_not_fit_the_question_is_unreadable(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    outcome = await replies.answer("K1", by="U0A", how="click", read=read_as(Answer(pick("Maybe"))))
    assert isinstance(outcome, Unreadable) and "not one of its options" in outcome.reason


async def test_a_reader_with_nothing_to_record_is_noted(tmp_path: Path) -> None:
    replies, record = rig(tmp_path)
    outcome = await replies.answer("K1", by="U0A", how="click", read=read_as(None))
    assert isinstance(outcome, Noted) and outcome.record.id == record.id


async def test_a_late_answer_is_told_who_answered_first_and_audited_as_a_duplicate(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    await replies.answer("K1", by="U0FIRST", how="click", read=read_as(Answer(pick("No"))))
    late = await replies.answer("K1", by="U0LATE", how="click", read=read_as(Answer(pick("Yes"))))
    assert isinstance(late, Ended) and late.answered and late.record is not None
    assert late.record.answered_by == "U0FIRST"
    assert [e.actor for e in await replies.ledger.store.history(kinds=["duplicate"])] == ["U0LATE"]


async def test_an_unreadable_reply_to_an_ended_question_is_told_it_is_too_late(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path)
    await replies.answer("K1", by="U0FIRST", how="click", read=read_as(Answer(pick("No"))))
    late = await replies.answer("K1", by="U0LATE", how="mail", read=fail_with(ValueError("gibberish")))
    assert isinstance(late, Ended) and late.answered


async def test_partial_answers_are_kept_until_every_question_has_one(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, DEPLOY, NOTES)
    first = await replies.answer("K1", by="a@x.org", how="mail", read=read_as(Answer(pick("Yes"), partial=True)))
    assert isinstance(first, Accepted) and not first.complete and first.still_open == ("notes",)
    notes = {"notes": AskUserQuestionAnswerItem(id="notes", custom="ship it")}
    second = await replies.answer("K1", by="b@x.org", how="mail", read=read_as(Answer(notes, partial=True)))
    assert isinstance(second, Accepted) and second.complete and second.record.answer is not None
    assert [item.selected or item.custom for item in second.record.answer.answers] == [["Yes"], "ship it"]


async def test_what_could_be_read_is_kept_and_the_rest_is_unreadable(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, DEPLOY, NOTES)
    answer = Answer(pick("Yes"), partial=True, problems=("question 2: say something",))
    outcome = await replies.answer("K1", by="a@x.org", how="mail", read=read_as(answer))
    assert isinstance(outcome, Unreadable) and outcome.problems == ("question 2: say something",)
    assert set(outcome.record.partial) == {"deploy"}


async def test_responders_fall_back_to_those_kept_with_the_delivery_once_the_route_is_gone(tmp_path: Path) -> None:
    replies, record = rig(tmp_path)
    replies.router = Router(["chat"], {"chat": [Subscription(agents=["someone-else"])]})
    delivery = await replies.ledger.store.add_delivery(record.id, "chat", "K1", {"responders": ["U0BOB"]})
    assert await replies.responders(record, delivery) == ["U0BOB"]


@pytest.mark.parametrize(
    ("person", "allowed"),
    [
        ("U0BOB", True),
        ("alice@example.org", True),
        ("ALICE@Example.org", True),
        ("carol@ops.example.org", True),
        ("carol@x.ops.example.org", False),
        ("carol@evil-ops.example.org", False),
        ("mallory", False),
        ("", False),
        ("@ops.example.org", False),
    ],
)
def test_the_allow_list_matches_ids_addresses_and_domains(person: str, allowed: bool) -> None:
    assert is_allowed(person, ["U0BOB", "alice@example.org", "@ops.example.org"]) is allowed


def test_an_empty_allow_list_lets_anyone_answer() -> None:
    assert is_allowed("anyone", [])


# --- k-of-n approvals -------------------------------------------------------------------------------------------------

PLAN = AskUserQuestionItem.model_validate(
    {
        "id": "plan",
        "question": "Ship the plan?",
        "detail": "1. migrate",
        "options": [{"label": "Approve"}, {"label": "Request changes"}],
        "intent": {"kind": "plan-review", "approve": "Approve"},
    }
)


def choose(label: str, question: str = "plan") -> Answer:
    return Answer({question: AskUserQuestionAnswerItem(id=question, selected=[label])})


async def test_one_approval_of_two_keeps_the_question_open_and_says_how_far_it_came(tmp_path: Path) -> None:
    replies, record = rig(tmp_path, PLAN, approvals=2)
    outcome = await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve")))
    assert isinstance(outcome, Accepted) and not outcome.complete
    assert outcome.progress == "1 of 2 approvals: U0BOB"
    assert (await replies.ledger.store.get_question(record.id)).status == "pending"  # type: ignore[union-attr]


async def test_the_kth_approval_answers_and_names_everyone_who_approved(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, PLAN, approvals=2)
    await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve")))
    outcome = await replies.answer("K1", by="carol@example.org", how="mail", read=read_as(choose("Approve")))
    assert isinstance(outcome, Accepted) and outcome.complete and outcome.record.answer is not None
    assert outcome.record.answered_by == "U0BOB, carol@example.org"
    assert [a.by for a in outcome.record.approvals] == ["U0BOB", "carol@example.org"]
    assert outcome.record.answer.answers[0].selected == ["Approve"]
    kinds = [(event.kind, event.actor) for event in await replies.ledger.store.history(kinds=["approved", "answered"])]
    assert kinds == [
        ("approved", "U0BOB"),
        ("approved", "carol@example.org"),
        ("answered", "U0BOB, carol@example.org"),
    ]


async def test_the_same_person_approving_twice_counts_once(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, PLAN, approvals=2)
    await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve")))
    again = await replies.answer("K1", by="U0BOB", how="thread reply", read=read_as(choose("Approve")))
    assert isinstance(again, Accepted) and again.repeated and not again.complete
    assert again.progress == "1 of 2 approvals: U0BOB"


async def test_the_same_person_in_two_channels_counts_once(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, PLAN, approvals=2)
    await replies.answer("K1", by="U0ALICE", how="click", read=read_as(choose("Approve")))
    by_mail = await replies.answer("K1", by="Alice@Example.org", how="mail", read=read_as(choose("Approve")))
    assert isinstance(by_mail, Accepted) and by_mail.repeated and not by_mail.complete


async def test_any_other_answer_from_a_responder_ends_it_at_once(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, PLAN, approvals=3)
    await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve")))
    veto = Answer({"plan": AskUserQuestionAnswerItem(id="plan", custom="Drain node-b first")})
    outcome = await replies.answer("K1", by="U0CAROL", how="form", read=read_as(veto))
    assert isinstance(outcome, Accepted) and outcome.complete and outcome.record.answer is not None
    assert outcome.record.answer.answers[0].custom == "Drain node-b first"
    assert outcome.record.answered_by == "U0CAROL"


async def test_an_approval_after_the_end_is_told_it_is_too_late(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, PLAN, approvals=2)
    await replies.answer("K1", by="U0CAROL", how="click", read=read_as(choose("Request changes")))
    late = await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve")))
    assert isinstance(late, Ended) and late.answered


async def test_a_question_with_an_approve_option_counts_approvals_too(tmp_path: Path) -> None:
    go = AskUserQuestionItem.model_validate(
        {"id": "go", "question": "Go?", "options": [{"label": "Approve (Recommended)"}, {"label": "Reject"}]}
    )
    replies, _ = rig(tmp_path, go, approvals=2)
    outcome = await replies.answer("K1", by="U0BOB", how="click", read=read_as(choose("Approve (Recommended)", "go")))
    assert isinstance(outcome, Accepted) and not outcome.complete


async def test_a_question_with_no_approve_option_is_answered_by_the_first_answer(tmp_path: Path) -> None:
    replies, _ = rig(tmp_path, approvals=2)
    outcome = await replies.answer("K1", by="U0BOB", how="click", read=read_as(Answer(pick("Yes"))))
    assert isinstance(outcome, Accepted) and outcome.complete
