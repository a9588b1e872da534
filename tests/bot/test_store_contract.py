"""The store's contract, held by both backends: the embedded SQLite store and PostgreSQL (several replicas).

Every test runs on each backend; `reopen` opens another store on the same database, as another process or replica
would. What only PostgreSQL has (a server that goes away, a URL) is in test_store_postgres.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from bot.store.errors import StoreError
from bot.store.interface import AsyncStore
from bot.store.records import (
    REMIND_AT_KEY,
    REMINDED_KEY,
    SEEN_EVENTS_KEPT,
    AgentRef,
    Approval,
    AuditKind,
    QuestionRecord,
    Resolution,
)
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption

from .store_backends import T0, Opener, answer, kinds_of, record, store_opener

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgres"])
async def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens a store on this test's database; every store opened is closed after the test."""
    async with store_opener(request, tmp_path / "state" / "handraise.db") as opener:
        yield opener


@pytest.fixture
async def store(reopen: Opener) -> AsyncStore:
    return await reopen()


# -- questions -------------------------------------------------------------------------------------------------------


async def test_create_then_get_round_trips_every_field(store: AsyncStore) -> None:
    partial = {"deploy": AskUserQuestionAnswerItem(id="deploy", custom="wait for Monday")}
    original = record(created_at=T0 + timedelta(microseconds=7), origin="api", partial=partial)
    await store.create_question(original)
    assert await store.get_question(original.id) == original


async def test_agentless_question_round_trips(store: AsyncStore) -> None:
    original = record(agent=None)
    await store.create_question(original)
    assert await store.get_question(original.id) == original


async def test_unknown_question_is_none(store: AsyncStore) -> None:
    assert await store.get_question("q_missing") is None


async def test_creating_a_question_audits_asked(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    (event,) = await store.history(question_id=original.id)
    assert (event.kind, event.detail) == ("asked", {"agent": "builder-1", "questions": ["deploy", "regions"]})


async def test_creating_a_question_twice_is_refused_and_audits_nothing(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    with pytest.raises(StoreError, match=original.id):
        await store.create_question(original)
    assert await kinds_of(store, original.id) == ["asked"]


async def test_another_store_on_the_database_sees_everything_written(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    item = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    await store.create_question(original)
    slack = await store.add_delivery(original.id, "slack", "C123:1712345.0001", {"channel": "C123", "ts": "1.2"})
    email = await store.add_delivery(original.id, "email", "tok-1", {"message_id": "<m1@example.org>"})
    saved = await store.save_partial(original.id, item, actor="U42", channel="slack")
    await store.audit(original.id, "escalated", channel="email", detail={"after_s": 1800})
    events = await store.history()
    await store.close()
    after = await reopen()
    assert await after.get_question(original.id) == saved
    assert await after.list_questions(status="pending") == [saved]
    assert await after.deliveries(original.id) == [slack, email]
    assert await after.find_delivery("email", "tok-1") == email
    assert await after.history() == events
    assert [event.kind for event in events] == ["asked", "delivered", "delivered", "partial", "escalated"]


async def test_a_fresh_store_is_at_its_latest_schema_and_sound(store: AsyncStore) -> None:
    assert await store.schema_version() >= 1
    assert await store.integrity_ok()
    await store.durable()


async def test_reopening_does_not_migrate_again_or_lose_anything(store: AsyncStore, reopen: Opener) -> None:
    await store.create_question(record())
    version = await store.schema_version()
    second = await reopen()
    assert await second.schema_version() == version
    assert await second.count_questions() == 1


async def test_a_closed_store_raises_store_errors(store: AsyncStore) -> None:
    await store.close()
    with pytest.raises(StoreError):
        await store.get_question("q_any")


# -- resolve ---------------------------------------------------------------------------------------------------------


async def test_the_first_answer_wins_and_the_second_is_told_by_whom(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    first = await store.resolve(original.id, "answered", answer=answer("Approve"), by="U1", via="slack")
    second = await store.resolve(original.id, "answered", answer=answer("No"), by="bob@example.org", via="email")
    assert first.won and not second.won
    assert second.record == first.record
    assert (second.record.answer, second.record.answered_by, second.record.answered_via) == (answer(), "U1", "slack")
    assert await store.get_question(original.id) == first.record
    answered, duplicate = await store.history(question_id=original.id, kinds={"answered", "duplicate"})
    assert (answered.kind, answered.channel, answered.actor) == ("answered", "slack", "U1")
    assert answered.detail == {"answer": answer().to_wire()}
    assert (duplicate.kind, duplicate.channel, duplicate.actor) == ("duplicate", "email", "bob@example.org")
    assert duplicate.detail["attempted"] == answer("No").to_wire()


async def test_a_cancel_after_the_answer_loses_quietly(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    await store.resolve(original.id, "answered", answer=answer(), by="U1", via="slack")
    late = await store.resolve(original.id, "cancelled", error_code="ASK_CANCELLED", error_message="agent gave up")
    assert not late.won
    assert late.record.status == "answered"
    assert await kinds_of(store, original.id) == ["asked", "answered"]


@pytest.mark.parametrize("status", ["cancelled", "expired", "failed"])
async def test_unanswered_endings_are_audited_with_their_code(store: AsyncStore, status: Any) -> None:
    original = record()
    await store.create_question(original)
    result = await store.resolve(original.id, status, by="bot", via="api", error_code="E_X", error_message="why")
    assert result.won
    assert (result.record.status, result.record.error_code, result.record.error_message) == (status, "E_X", "why")
    event = (await store.history(question_id=original.id))[-1]
    assert (event.kind, event.actor, event.channel, event.detail) == (
        status,
        "bot",
        "api",
        {"code": "E_X", "message": "why"},
    )


async def test_resolving_an_unknown_question_raises(store: AsyncStore) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        await store.resolve("q_missing", "expired")


@pytest.mark.parametrize(
    ("status", "with_answer"), [("pending", False), ("answered", False), ("cancelled", True), ("expired", True)]
)
async def test_resolve_needs_a_final_status_and_an_answer_exactly_when_answered(
    store: AsyncStore, status: Any, with_answer: bool
) -> None:
    original = record()
    await store.create_question(original)
    with pytest.raises(ValueError):
        await store.resolve(original.id, status, answer=answer() if with_answer else None)
    assert await store.get_question(original.id) == original


async def test_resolving_with_a_stale_copy_keeps_what_was_saved_since(store: AsyncStore) -> None:
    stale = record()
    await store.create_question(stale)
    partial = AskUserQuestionAnswerItem(id="regions", selected=["eu"])
    await store.save_partial(stale.id, partial, actor="bob", channel="email")
    resolution = await store.resolve(stale.id, "answered", answer=answer(), by="alice", via="web", seen=stale)
    assert resolution.won and resolution.record.partial == {"regions": partial}
    assert await store.get_question(stale.id) == resolution.record


async def test_resolvers_on_separate_stores_at_once_yield_exactly_one_winner(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    await store.create_question(original)
    contenders = [await reopen() for _ in range(6)]
    results: dict[int, Resolution] = {}

    async def contend(index: int, mine: AsyncStore) -> None:
        results[index] = await mine.resolve(original.id, "answered", answer=answer(), by=f"user{index}", via="web")

    async with anyio.create_task_group() as group:
        for index, mine in enumerate(contenders):
            group.start_soon(contend, index, mine)
    winners = [index for index, result in results.items() if result.won]
    assert len(winners) == 1
    assert {result.record.answered_by for result in results.values()} == {f"user{winners[0]}"}
    assert sorted(await kinds_of(store, original.id)) == ["answered", "asked"] + ["duplicate"] * 5


async def test_resolvers_holding_the_same_current_copy_at_once_yield_exactly_one_winner(
    store: AsyncStore, reopen: Opener
) -> None:
    original = record()
    await store.create_question(original)
    contenders = [await reopen() for _ in range(6)]
    results: dict[int, Resolution] = {}

    async def contend(index: int, mine: AsyncStore) -> None:
        results[index] = await mine.resolve(
            original.id, "answered", answer=answer(), by=f"user{index}", via="web", seen=original
        )

    async with anyio.create_task_group() as group:
        for index, mine in enumerate(contenders):
            group.start_soon(contend, index, mine)
    winners = [index for index, result in results.items() if result.won]
    assert len(winners) == 1
    assert {result.record.answered_by for result in results.values()} == {f"user{winners[0]}"}
    assert await store.get_question(original.id) == results[winners[0]].record
    assert sorted(await kinds_of(store, original.id)) == ["answered", "asked"] + ["duplicate"] * 5


async def test_resolving_with_a_copy_from_before_the_answer_loses_and_is_told_by_whom(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    first = await store.resolve(original.id, "answered", answer=answer(), by="U1", via="slack")
    late = await store.resolve(original.id, "answered", answer=answer("No"), by="bob", via="web", seen=original)
    assert not late.won
    assert late.record == first.record
    assert await kinds_of(store, original.id) == ["asked", "answered", "duplicate"]


# -- partial answers and approvals -----------------------------------------------------------------------------------


async def test_partial_answers_accumulate_and_a_later_one_replaces_an_earlier(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    first = AskUserQuestionAnswerItem(id="deploy", selected=["No"])
    regions = AskUserQuestionAnswerItem(id="regions", selected=["eu", "us"])
    changed = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    await store.save_partial(original.id, first, actor="U1", channel="slack")
    await store.save_partial(original.id, regions, actor="U2", channel="slack")
    latest = await store.save_partial(original.id, changed, actor="U1", channel="slack")
    assert latest.partial == {"deploy": changed, "regions": regions}
    assert await store.get_question(original.id) == latest
    events = await store.history(question_id=original.id, kinds=["partial"])
    assert [(event.actor, event.detail["item"]) for event in events] == [
        ("U1", first.to_wire()),
        ("U2", regions.to_wire()),
        ("U1", changed.to_wire()),
    ]


async def test_a_partial_answer_after_resolution_is_not_saved_but_audited(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    resolved = (await store.resolve(original.id, "expired", error_code="ASK_TIMEOUT")).record
    item = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    assert await store.save_partial(original.id, item, actor="U9", channel="slack") == resolved
    assert await store.get_question(original.id) == resolved
    late = (await store.history(question_id=original.id))[-1]
    assert (late.kind, late.actor, late.detail["partial"]) == ("duplicate", "U9", item.to_wire())


async def test_a_partial_answer_needs_a_known_question_and_item(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    with pytest.raises(StoreError, match="q_missing"):
        await store.save_partial("q_missing", AskUserQuestionAnswerItem(id="deploy"), actor=None, channel="web")
    with pytest.raises(ValueError, match="nope"):
        await store.save_partial(original.id, AskUserQuestionAnswerItem(id="nope"), actor=None, channel="web")
    assert await store.get_question(original.id) == original


async def test_partial_answers_from_separate_stores_at_once_are_all_kept(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    await store.create_question(original)
    other = await reopen()
    deploy = AskUserQuestionAnswerItem(id="deploy", selected=["No"])
    regions = AskUserQuestionAnswerItem(id="regions", selected=["us"])
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: store.save_partial(original.id, deploy, actor="U1", channel="slack"))
        group.start_soon(lambda: other.save_partial(original.id, regions, actor="U2", channel="email"))
    stored = await store.get_question(original.id)
    assert stored is not None and stored.partial == {"deploy": deploy, "regions": regions}


def approval(identity: str, by: str | None = None, via: str = "slack") -> Approval:
    return Approval(by=by or identity, via=via, identity=identity)


async def test_approvals_accumulate_once_per_identity(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    first, counted = await store.add_approval(original.id, approval("bob@example.org", "U0BOB"))
    again, counted_again = await store.add_approval(original.id, approval("bob@example.org", via="email"))
    second, counted_second = await store.add_approval(original.id, approval("carol@example.org"))
    assert (counted, counted_again, counted_second) == (True, False, True)
    assert again == first
    assert [each.identity for each in second.approvals] == ["bob@example.org", "carol@example.org"]
    assert await store.get_question(original.id) == second
    events = await store.history(question_id=original.id, kinds=["approved"])
    assert [(event.actor, event.detail) for event in events] == [
        ("U0BOB", {"identity": "bob@example.org", "count": 1}),
        ("carol@example.org", {"identity": "carol@example.org", "count": 2}),
    ]


async def test_an_approval_after_resolution_is_not_counted_but_audited(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    resolved = (await store.resolve(original.id, "cancelled")).record
    returned, counted = await store.add_approval(original.id, approval("bob@example.org"))
    assert (returned, counted) == (resolved, False)
    late = (await store.history(question_id=original.id))[-1]
    assert (late.kind, late.detail) == ("duplicate", {"approval": "bob@example.org", "status": "cancelled"})


async def test_an_approval_needs_a_known_question(store: AsyncStore) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        await store.add_approval("q_missing", approval("bob@example.org"))


async def test_one_identity_approving_on_separate_stores_at_once_counts_once(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    await store.create_question(original)
    stores = [await reopen() for _ in range(4)]
    counted: list[bool] = []

    async def approve(mine: AsyncStore, via: str) -> None:
        counted.append((await mine.add_approval(original.id, approval("bob@example.org", via=via)))[1])

    async with anyio.create_task_group() as group:
        for index, mine in enumerate(stores):
            group.start_soon(approve, mine, f"channel{index}")
    stored = await store.get_question(original.id)
    assert sorted(counted) == [False, False, False, True]
    assert stored is not None and [each.identity for each in stored.approvals] == ["bob@example.org"]
    assert await kinds_of(store, original.id) == ["asked", "approved"]


async def test_different_identities_approving_on_separate_stores_at_once_are_all_counted_in_turn(
    store: AsyncStore, reopen: Opener
) -> None:
    original = record()
    await store.create_question(original)
    stores = [await reopen() for _ in range(4)]
    identities = [f"approver{index}@example.org" for index in range(len(stores))]

    async def approve(mine: AsyncStore, identity: str) -> None:
        await mine.add_approval(original.id, approval(identity))

    async with anyio.create_task_group() as group:
        for mine, identity in zip(stores, identities, strict=True):
            group.start_soon(approve, mine, identity)
    stored = await store.get_question(original.id)
    assert stored is not None and sorted(each.identity for each in stored.approvals) == identities
    events = await store.history(question_id=original.id, kinds=["approved"])
    assert [event.detail["count"] for event in events] == [1, 2, 3, 4]


# -- deliveries and reminders ----------------------------------------------------------------------------------------


async def test_a_reply_finds_its_delivery_by_channel_key(store: AsyncStore) -> None:
    one, two = record(), record()
    await store.create_question(one)
    await store.create_question(two)
    slack = await store.add_delivery(one.id, "slack", "C1:100.1", {"ts": "100.1"})
    await store.add_delivery(two.id, "slack", "C1:200.2", {"ts": "200.2"})
    email = await store.add_delivery(two.id, "email", "C1:100.1", {"token": "same text, other channel"})
    assert await store.find_delivery("slack", "C1:100.1") == slack
    assert await store.find_delivery("email", "C1:100.1") == email
    assert await store.find_delivery("slack", "C1:999.9") is None
    assert await store.get_delivery(one.id, "slack") == slack
    assert await store.get_delivery(one.id, "email") is None


async def test_a_reply_finds_its_delivery_and_the_question_as_stored_now_together(
    store: AsyncStore, reopen: Opener
) -> None:
    one, two = record(), record()
    await store.create_question(one)
    await store.create_question(two)
    slack = await store.add_delivery(one.id, "slack", "C1:100.1", {"ts": "100.1"})
    email = await store.add_delivery(two.id, "email", "C1:100.1", {"token": "same text, other channel"})
    resolved = (await (await reopen()).resolve(one.id, "answered", answer=answer(), by="U1", via="slack")).record
    assert await store.find_delivery_with_question("slack", "C1:100.1") == (resolved, slack)
    assert await store.find_delivery_with_question("email", "C1:100.1") == (two, email)
    assert await store.find_delivery_with_question("slack", "C1:999.9") is None
    assert await store.find_delivery_with_question("web", "C1:100.1") is None


async def test_a_redelivery_on_the_same_channel_replaces_the_first(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    await store.add_delivery(original.id, "slack", "C1:1.0", {"ts": "1.0"})
    again = await store.add_delivery(original.id, "slack", "C2:2.0", {"ts": "2.0", "channel": "C2"})
    assert await store.deliveries(original.id) == [again]
    assert await store.find_delivery("slack", "C1:1.0") is None
    assert await kinds_of(store, original.id) == ["asked", "delivered", "delivered"]


async def test_a_delivery_key_belongs_to_one_question_per_channel(store: AsyncStore) -> None:
    one, two = record(), record()
    await store.create_question(one)
    await store.create_question(two)
    await store.add_delivery(one.id, "email", "tok", {})
    with pytest.raises(StoreError, match="tok"):
        await store.add_delivery(two.id, "email", "tok", {})
    assert await store.deliveries(two.id) == []
    assert await kinds_of(store, two.id) == ["asked"]


async def test_a_delivery_needs_a_known_question(store: AsyncStore) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        await store.add_delivery("q_missing", "slack", "C1:1.0", {})


async def test_a_delivery_ref_reads_back_as_json_would_keep_it(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    delivery = await store.add_delivery(original.id, "slack", "k", {"pair": (1, 2)})
    assert delivery.ref == {"pair": [1, 2]}
    assert await store.get_delivery(original.id, "slack") == delivery


async def test_has_delivery_says_whether_a_question_was_shown_on_a_channel(store: AsyncStore) -> None:
    shown = record()
    await store.create_question(shown)
    await store.add_delivery(shown.id, "web", shown.id, {})
    assert await store.has_delivery(shown.id, "web")
    assert not await store.has_delivery(shown.id, "slack")
    assert not await store.has_delivery("q_unknown", "web")


async def test_notes_on_a_delivery_are_kept_in_its_ref_while_pending_without_an_audit_line(
    store: AsyncStore, reopen: Opener
) -> None:
    original = record()
    await store.create_question(original)
    await store.add_delivery(original.id, "discord", "m1", {"message_id": "m1"})
    before = await kinds_of(store, original.id)
    assert await store.note_on_delivery(original.id, "discord", {"pick:0:7": ["A", "B"]})
    assert await store.note_on_delivery(original.id, "discord", {"pick:0:7": ["B"], "pick:0:8": ["A"]})
    again = await reopen()
    kept = await again.get_delivery(original.id, "discord")
    assert kept is not None and kept.ref == {"message_id": "m1", "pick:0:7": ["B"], "pick:0:8": ["A"]}
    assert await kinds_of(store, original.id) == before
    assert not await store.note_on_delivery(original.id, "slack", {"x": 1})  # no delivery there
    await store.resolve(original.id, "answered", answer=answer(), by="7", via="discord")
    assert not await store.note_on_delivery(original.id, "discord", {"pick:0:7": ["A"]})
    kept = await store.get_delivery(original.id, "discord")
    assert kept is not None and kept.ref["pick:0:7"] == ["B"]


async def test_reminders_are_counted_in_the_record_and_kept_in_the_delivery_ref(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    await store.add_delivery(original.id, "slack", "k", {"ts": "1.0"})
    await store.remind(original.id, "slack", next_at=T0)
    updated = await store.remind(original.id, "slack", next_at=T0 + timedelta(hours=1))
    assert updated is not None and updated.reminders == 2
    assert await store.get_question(original.id) == updated
    delivery = await store.get_delivery(original.id, "slack")
    assert delivery is not None
    assert delivery.ref == {"ts": "1.0", REMINDED_KEY: 2, REMIND_AT_KEY: "2024-05-01T13:00:00.000000+00:00"}
    event = (await store.history(question_id=original.id))[-1]
    assert (event.kind, event.channel, event.detail["count"]) == ("reminded", "slack", 2)


async def test_no_reminder_is_recorded_once_resolved_or_without_a_delivery(store: AsyncStore) -> None:
    undelivered, resolved = record(), record()
    await store.create_question(undelivered)
    await store.create_question(resolved)
    await store.add_delivery(resolved.id, "slack", "k", {})
    await store.resolve(resolved.id, "expired")
    assert await store.remind(undelivered.id, "slack", next_at=T0) is None
    assert await store.remind(resolved.id, "slack", next_at=T0) is None
    assert "reminded" not in await kinds_of(store, undelivered.id) + await kinds_of(store, resolved.id)
    with pytest.raises(StoreError, match="q_missing"):
        await store.remind("q_missing", "slack", next_at=T0)


# -- listing and history ---------------------------------------------------------------------------------------------


async def test_list_questions_filters_orders_and_limits(store: AsyncStore) -> None:
    alpha = AgentRef(id="alpha")
    a1 = record(agent=alpha, created_at=T0)
    b1 = record(agent=AgentRef(id="beta"), created_at=T0 + timedelta(seconds=1))
    a2 = record(agent=alpha, created_at=T0 + timedelta(seconds=2))
    none = record(agent=None, created_at=T0 + timedelta(seconds=3))
    for each in (a1, b1, a2, none):
        await store.create_question(each)
    await store.add_delivery(b1.id, "slack", "k1", {})
    await store.add_delivery(none.id, "slack", "k2", {})
    await store.add_delivery(a2.id, "email", "k3", {})
    a1 = (await store.resolve(a1.id, "answered", answer=answer(), by="U1", via="slack")).record

    async def ids(**filters: Any) -> list[str]:
        return [question.id for question in await store.list_questions(**filters)]

    assert await ids() == [none.id, a2.id, b1.id, a1.id]
    assert await ids(newest_first=False) == [a1.id, b1.id, a2.id, none.id]
    assert await ids(limit=2) == [none.id, a2.id]
    assert await ids(limit=2, offset=1) == [a2.id, b1.id]
    assert await ids(limit=-1) == []
    assert await ids(status="pending") == [none.id, a2.id, b1.id]
    assert await ids(agent_id="alpha") == [a2.id, a1.id]
    assert await ids(channel="slack") == [none.id, b1.id]
    assert await ids(channel="slack", status="pending", agent_id="beta") == [b1.id]
    assert await ids(status="failed") == []


async def test_questions_created_in_the_same_instant_list_in_creation_order(store: AsyncStore) -> None:
    same = [record(created_at=T0) for _ in range(3)]
    for each in same:
        await store.create_question(each)
    listed = await store.list_questions(newest_first=False)
    assert [question.id for question in listed] == [each.id for each in same]


async def test_count_questions_by_status_and_channel(store: AsyncStore) -> None:
    one, two = record(), record()
    await store.create_question(one)
    await store.create_question(two)
    await store.add_delivery(two.id, "slack", "k", {})
    await store.resolve(one.id, "expired")
    counts = (
        await store.count_questions(),
        await store.count_questions("pending"),
        await store.count_questions("failed"),
    )
    assert counts == (2, 1, 0)
    assert await store.count_questions(channel="slack") == 1
    assert await store.count_questions("expired", channel="slack") == 0


async def test_history_filters_and_pages(store: AsyncStore) -> None:
    mine = record(agent=AgentRef(id="alpha"))
    theirs = record(agent=AgentRef(id="beta"))
    await store.create_question(mine)
    await store.create_question(theirs)
    await store.add_delivery(mine.id, "slack", "k1", {})
    await store.audit(theirs.id, "refused", channel="slack", actor="U666", detail={"reason": "not allowed"})
    await store.resolve(mine.id, "answered", answer=answer(), by="U1", via="slack")
    everything = await store.history()
    assert [event.kind for event in everything] == ["asked", "asked", "delivered", "refused", "answered"]
    assert [event.seq for event in everything] == sorted(event.seq for event in everything)
    assert [event.kind for event in await store.history(agent_id="alpha")] == ["asked", "delivered", "answered"]
    assert [event.kind for event in await store.history(question_id=theirs.id)] == ["asked", "refused"]
    assert [event.kind for event in await store.history(kinds=["refused", "answered"])] == ["refused", "answered"]
    assert await store.history(kinds=[]) == []
    assert await store.history(limit=2) == everything[:2]
    assert await store.history(after_seq=everything[2].seq) == everything[3:]
    assert await store.history(agent_id="alpha", kinds={"answered"}, after_seq=everything[0].seq) == [everything[4]]


async def test_audit_returns_what_history_reads_back(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    event = await store.audit(original.id, "retracted", channel="slack", actor="bot", detail={"pair": (1, 2)})
    assert event.detail == {"pair": [1, 2]}
    assert await store.history(kinds=["retracted"]) == [event]


async def test_audit_needs_a_known_question_and_kind(store: AsyncStore) -> None:
    original = record()
    await store.create_question(original)
    with pytest.raises(StoreError, match="q_missing"):
        await store.audit("q_missing", "escalated")
    with pytest.raises(ValueError, match="gossip"):
        await store.audit(original.id, cast(AuditKind, "gossip"))
    assert await kinds_of(store, original.id) == ["asked"]


async def test_audit_events_from_separate_stores_get_distinct_increasing_seqs(
    store: AsyncStore, reopen: Opener
) -> None:
    original = record()
    await store.create_question(original)
    stores = [store, *[await reopen() for _ in range(3)]]

    async def write(mine: AsyncStore) -> None:
        for _ in range(5):
            await mine.audit(original.id, "escalated")

    async with anyio.create_task_group() as group:
        for mine in stores:
            group.start_soon(write, mine)
    seqs = [event.seq for event in await store.history()]
    assert len(seqs) == 21 and seqs == sorted(set(seqs))


# -- events received -------------------------------------------------------------------------------------------------


async def test_an_event_is_new_only_the_first_time_on_its_channel(store: AsyncStore) -> None:
    assert await store.first_sight("slack", "event:Ev01")
    assert not await store.first_sight("slack", "event:Ev01")
    assert await store.first_sight("email", "event:Ev01")
    assert await store.first_sight("slack", "event:Ev02")


async def test_a_seen_event_is_remembered_by_another_store(store: AsyncStore, reopen: Opener) -> None:
    assert await store.first_sight("slack", "event:Ev01")
    assert not await (await reopen()).first_sight("slack", "event:Ev01")


async def test_seen_events_are_forgotten_after_a_day(store: AsyncStore) -> None:
    assert await store.first_sight("slack", "event:old", now=T0)
    assert not await store.first_sight("slack", "event:old", now=T0 + SEEN_EVENTS_KEPT - timedelta(seconds=1))
    assert await store.first_sight("slack", "event:new", now=T0 + SEEN_EVENTS_KEPT + timedelta(seconds=1))
    assert await store.first_sight("slack", "event:old", now=T0 + SEEN_EVENTS_KEPT + timedelta(seconds=2))


async def test_one_event_seen_by_separate_stores_at_once_is_new_to_one(store: AsyncStore, reopen: Opener) -> None:
    stores = [store, *[await reopen() for _ in range(3)]]
    fresh: list[bool] = []

    async def see(mine: AsyncStore) -> None:
        fresh.append(await mine.first_sight("slack", "event:retried"))

    async with anyio.create_task_group() as group:
        for mine in stores:
            group.start_soon(see, mine)
    assert sorted(fresh) == [False, False, False, True]


# -- timers that act once ------------------------------------------------------------------------------------------


async def test_a_timer_fires_once_per_question_and_name(store: AsyncStore) -> None:
    first, second = record(), record()
    for one in (first, second):
        await store.create_question(one)
    assert await store.fire_once(first.id, "escalate:slack")
    assert not await store.fire_once(first.id, "escalate:slack")
    assert await store.fire_once(first.id, "escalate:email")
    assert await store.fire_once(second.id, "escalate:slack")


async def test_a_fired_timer_is_remembered_by_another_store(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    await store.create_question(original)
    assert await store.fire_once(original.id, "escalate:slack")
    assert not await (await reopen()).fire_once(original.id, "escalate:slack")


async def test_one_timer_fired_by_separate_stores_at_once_fires_in_one(store: AsyncStore, reopen: Opener) -> None:
    original = record()
    await store.create_question(original)
    stores = [store, *[await reopen() for _ in range(3)]]
    fired: list[bool] = []

    async def fire(mine: AsyncStore) -> None:
        fired.append(await mine.fire_once(original.id, "escalate:slack"))

    async with anyio.create_task_group() as group:
        for mine in stores:
            group.start_soon(fire, mine)
    assert sorted(fired) == [False, False, False, True]


async def test_a_timer_of_an_unknown_question_is_refused(store: AsyncStore) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        await store.fire_once("q_missing", "escalate:slack")


@pytest.mark.parametrize("name", ["'; DROP TABLE fired; -- \\0 %s ?", "nul\x00name"], ids=["hostile", "nul"])
async def test_hostile_timer_names_fire_once(store: AsyncStore, name: str) -> None:
    original = record()
    await store.create_question(original)
    assert await store.fire_once(original.id, name)
    assert not await store.fire_once(original.id, name)
    assert await store.fire_once(original.id, name + "x")


# -- opening ---------------------------------------------------------------------------------------------------------


async def test_stores_opening_a_fresh_database_at_once_migrate_it_once(reopen: Opener) -> None:
    opened: list[AsyncStore] = []

    async def open_one() -> None:
        opened.append(await reopen())

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(open_one)
    versions = {await each.schema_version() for each in opened}
    assert len(versions) == 1
    original = record()
    await opened[0].create_question(original)
    assert await opened[-1].get_question(original.id) == original


# -- hostile and oversize values -------------------------------------------------------------------------------------

HOSTILE = "'; DROP TABLE questions; --\" \\ \\0 ` %s ? :name $1 \u202eevil\u202c 你好 🙋‍♀️ e\u0301 \r\n\t"
NUL = "nul\x00byte\x00"


@pytest.mark.parametrize("text", [HOSTILE, NUL, HOSTILE + NUL], ids=["hostile", "nul", "both"])
async def test_hostile_strings_are_stored_and_read_back_exactly(store: AsyncStore, reopen: Opener, text: str) -> None:
    item = AskUserQuestionItem(
        id=text, question=text, detail=text, options=[AskUserQuestionOption(label=text, description=text)]
    )
    original = record(id=f"q_{text}", agent=AgentRef(id=text, name=text, labels={text: text}), questions=[item])
    reply = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id=text, selected=[text], custom=text)])
    await store.create_question(original)
    delivery = await store.add_delivery(original.id, text, text, {text: text})
    event = await store.audit(original.id, "escalated", channel=text, actor=text, detail={text: text})
    resolved = (await store.resolve(original.id, "answered", answer=reply, by=text, via=text)).record
    after = await reopen()
    assert await after.get_question(original.id) == resolved
    assert await after.find_delivery(text, text) == delivery
    assert await after.find_delivery_with_question(text, text) == (resolved, delivery)
    assert await after.history(kinds=["escalated"]) == [event]
    assert (event.channel, event.actor, event.detail) == (text, text, {text: text})
    assert await after.list_questions(agent_id=text) == [resolved]
    assert await after.count_questions(channel=text) == 1
    assert await after.first_sight(text, text)
    assert not await after.first_sight(text, text)


@pytest.mark.parametrize("near", ["nul\\0byte", "nul\\x00byte", "nul\\\x00byte", "nul", "nul\x00"])
async def test_a_key_with_a_nul_never_matches_a_look_alike_without_one(store: AsyncStore, near: str) -> None:
    original = record(id=f"q_{NUL}")
    await store.create_question(original)
    await store.add_delivery(original.id, "slack", NUL, {})
    assert await store.find_delivery("slack", near) is None
    assert await store.find_delivery_with_question("slack", near) is None
    assert await store.get_question(f"q_{near}") is None


async def test_a_megabyte_of_text_is_kept_in_records_refs_and_details(store: AsyncStore) -> None:
    huge = "x" * 1_000_000 + HOSTILE
    item = AskUserQuestionItem(id="big", question="big?", detail=huge)
    original = record(questions=[item])
    await store.create_question(original)
    delivery = await store.add_delivery(original.id, "web", "k", {"body": huge})
    event = await store.audit(original.id, "escalated", detail={"body": huge})
    reply = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="big", custom=huge)])
    resolved = (await store.resolve(original.id, "answered", answer=reply, by="U1", via="web")).record
    assert await store.get_question(original.id) == resolved
    assert await store.get_delivery(original.id, "web") == delivery
    assert (await store.history(kinds=["escalated"])) == [event]


async def test_long_keys_and_names_are_kept(store: AsyncStore) -> None:
    long = "k" * 1000 + "ü" * 200
    original = record(id="q_" + long, agent=AgentRef(id=long))
    await store.create_question(original)
    delivery = await store.add_delivery(original.id, "slack", long, {})
    assert await store.find_delivery("slack", long) == delivery
    assert await store.list_questions(agent_id=long) == [original]


async def test_questions_as_they_come_from_the_wire_round_trip(store: AsyncStore) -> None:
    original = QuestionRecord.model_validate({"questions": [{"id": "q", "question": "Go?", "multiSelect": True}]})
    await store.create_question(original)
    assert await store.get_question(original.id) == original
