"""The durable store: a restart loses nothing, the first resolution wins, the audit log only grows."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import ValidationError

from bot.store.chain import verify
from bot.store.errors import StoreError
from bot.store.records import SEEN_EVENTS_KEPT, AgentRef, AuditKind, QuestionRecord, Resolution, new_question_id
from bot.store.sqlite.schema import APPLICATION_ID, statements
from bot.store.sqlite.store import MIGRATIONS, SCHEMA_VERSION, Store
from core.agents import Agent
from core.types import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
)
from tests.bot.store_backends import answer, record

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def kinds_of(store: Store, question_id: str) -> list[str]:
    return [event.kind for event in store.history(question_id=question_id)]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "handraise.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store.open(db_path) as opened:
        yield opened


# -- records ---------------------------------------------------------------------------------------------------------


def test_question_ids_are_prefixed_timed_random_and_url_safe() -> None:
    ids = {new_question_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"q_[0-9A-Za-z]{7}[A-Za-z0-9_-]{16}", id) for id in ids)


def test_question_ids_made_later_sort_after_earlier_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    moments = iter([1_700_000_000_000, 1_700_000_000_001, 1_700_000_061_999, 1_800_000_000_000, 3_500_000_000_000])
    monkeypatch.setattr(time, "time_ns", lambda: next(moments) * 1_000_000)
    ids = [new_question_id() for _ in range(5)]
    assert ids == sorted(ids)


def test_records_refuse_naive_datetimes_and_normalise_to_utc() -> None:
    with pytest.raises(ValidationError):
        record(created_at=datetime(2024, 5, 1, 12, 0))
    paris = record(created_at=datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))))
    assert paris.created_at == T0
    assert paris.created_at.tzinfo is UTC


def test_agent_ref_snapshots_a_live_agent() -> None:
    ref = AgentRef.from_agent(Agent("a1", name="Alpha", labels={"k": "v"}))
    assert ref == AgentRef(id="a1", name="Alpha", labels={"k": "v"})


# -- questions -------------------------------------------------------------------------------------------------------


def test_create_then_get_round_trips_every_field(store: Store) -> None:
    partial = {"deploy": AskUserQuestionAnswerItem(id="deploy", custom="wait for Monday")}
    original = record(created_at=T0 + timedelta(microseconds=7), origin="api", partial=partial)
    store.create_question(original)
    assert store.get_question(original.id) == original


def test_questions_are_kept_in_their_camel_case_wire_form(store: Store, db_path: Path) -> None:
    original = record()
    store.create_question(original)
    with sqlite3.connect(db_path) as raw:
        (stored,) = raw.execute("SELECT record_json FROM questions WHERE id = ?", (original.id,)).fetchone()
    assert '"multiSelect":true' in stored
    assert "multi_select" not in stored


def test_agentless_question_round_trips(store: Store) -> None:
    original = record(agent=None)
    store.create_question(original)
    assert store.get_question(original.id) == original


def test_unknown_question_is_none(store: Store) -> None:
    assert store.get_question("q_missing") is None


def test_creating_a_question_audits_asked(store: Store) -> None:
    original = record()
    store.create_question(original)
    (event,) = store.history(question_id=original.id)
    assert (event.kind, event.detail) == ("asked", {"agent": "builder-1", "questions": ["deploy", "regions"]})


def test_creating_a_question_twice_is_refused_and_audits_nothing(store: Store) -> None:
    original = record()
    store.create_question(original)
    with pytest.raises(StoreError, match=original.id):
        store.create_question(original)
    assert kinds_of(store, original.id) == ["asked"]


def test_a_restart_loses_no_question_delivery_partial_or_audit(db_path: Path) -> None:
    original = record()
    item = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    with Store.open(db_path) as before:
        before.create_question(original)
        slack = before.add_delivery(original.id, "slack", "C123:1712345.0001", {"channel": "C123", "ts": "1.2"})
        email = before.add_delivery(original.id, "email", "tok-1", {"message_id": "<m1@example.org>"})
        saved = before.save_partial(original.id, item, actor="U42", channel="slack")
        before.audit(original.id, "escalated", channel="email", detail={"after_s": 1800})
        events = before.history()
    with Store.open(db_path) as after:
        assert after.get_question(original.id) == saved
        assert after.list_questions(status="pending") == [saved]
        assert after.deliveries(original.id) == [slack, email]
        assert after.find_delivery("email", "tok-1") == email
        assert after.history() == events
        assert [event.kind for event in events] == ["asked", "delivered", "delivered", "partial", "escalated"]


# -- resolve ---------------------------------------------------------------------------------------------------------


def test_the_first_answer_wins_and_the_second_is_told_by_whom(store: Store) -> None:
    original = record()
    store.create_question(original)
    first = store.resolve(original.id, "answered", answer=answer("Approve"), by="U1", via="slack")
    second = store.resolve(original.id, "answered", answer=answer("No"), by="bob@example.org", via="email")
    assert first.won and not second.won
    assert second.record == first.record
    assert (second.record.answer, second.record.answered_by, second.record.answered_via) == (answer(), "U1", "slack")
    assert second.record.resolved_at is not None
    assert store.get_question(original.id) == first.record
    answered, duplicate = store.history(question_id=original.id, kinds={"answered", "duplicate"})
    assert (answered.kind, answered.channel, answered.actor) == ("answered", "slack", "U1")
    assert answered.detail == {"answer": answer().to_wire()}
    assert (duplicate.kind, duplicate.channel, duplicate.actor) == ("duplicate", "email", "bob@example.org")
    assert duplicate.detail["attempted"] == answer("No").to_wire()


def test_a_cancel_after_the_answer_loses_quietly(store: Store) -> None:
    original = record()
    store.create_question(original)
    store.resolve(original.id, "answered", answer=answer(), by="U1", via="slack")
    late = store.resolve(original.id, "cancelled", error_code="ASK_CANCELLED", error_message="agent gave up")
    assert not late.won
    assert late.record.status == "answered"
    assert kinds_of(store, original.id) == ["asked", "answered"]


@pytest.mark.parametrize("status", ["cancelled", "expired", "failed"])
def test_unanswered_endings_are_audited_with_their_code(store: Store, status: Any) -> None:
    original = record()
    store.create_question(original)
    result = store.resolve(original.id, status, by="bot", via="api", error_code="E_X", error_message="why")
    assert result.won
    assert (result.record.status, result.record.error_code, result.record.error_message) == (status, "E_X", "why")
    assert result.record.answer is None
    event = store.history(question_id=original.id)[-1]
    assert (event.kind, event.actor, event.channel) == (status, "bot", "api")
    assert event.detail == {"code": "E_X", "message": "why"}


def test_resolving_an_unknown_question_raises(store: Store) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        store.resolve("q_missing", "expired")


@pytest.mark.parametrize(
    ("status", "with_answer"), [("pending", False), ("answered", False), ("cancelled", True), ("expired", True)]
)
def test_resolve_needs_a_final_status_and_an_answer_exactly_when_answered(
    store: Store, status: Any, with_answer: bool
) -> None:
    original = record()
    store.create_question(original)
    with pytest.raises(ValueError):
        store.resolve(original.id, status, answer=answer() if with_answer else None)
    assert store.get_question(original.id) == original


def test_two_processes_resolving_at_once_yield_exactly_one_winner(db_path: Path) -> None:
    original = record()
    with Store.open(db_path) as setup:
        setup.create_question(original)
    contenders = 8
    barrier = threading.Barrier(contenders)
    results: dict[int, Resolution] = {}

    def contend(index: int) -> None:
        with Store.open(db_path) as mine:
            barrier.wait()
            results[index] = mine.resolve(original.id, "answered", answer=answer(), by=f"user{index}", via="web")

    threads = [threading.Thread(target=contend, args=(index,)) for index in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [index for index, result in results.items() if result.won]
    assert len(results) == contenders
    assert len(winners) == 1
    assert {result.record.answered_by for result in results.values()} == {f"user{winners[0]}"}
    with Store.open(db_path) as check:
        assert sorted(kinds_of(check, original.id)) == ["answered", "asked"] + ["duplicate"] * (contenders - 1)


# -- partial answers -------------------------------------------------------------------------------------------------


def test_partial_answers_accumulate_and_a_later_one_replaces_an_earlier(store: Store) -> None:
    original = record()
    store.create_question(original)
    first = AskUserQuestionAnswerItem(id="deploy", selected=["No"])
    regions = AskUserQuestionAnswerItem(id="regions", selected=["eu", "us"])
    changed = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    store.save_partial(original.id, first, actor="U1", channel="slack")
    store.save_partial(original.id, regions, actor="U2", channel="slack")
    latest = store.save_partial(original.id, changed, actor="U1", channel="slack")
    assert latest.partial == {"deploy": changed, "regions": regions}
    assert store.get_question(original.id) == latest
    events = store.history(question_id=original.id, kinds=["partial"])
    assert [(event.actor, event.detail["item"]) for event in events] == [
        ("U1", first.to_wire()),
        ("U2", regions.to_wire()),
        ("U1", changed.to_wire()),
    ]


def test_a_partial_answer_after_resolution_is_not_saved_but_audited(store: Store) -> None:
    original = record()
    store.create_question(original)
    resolved = store.resolve(original.id, "expired", error_code="ASK_TIMEOUT").record
    item = AskUserQuestionAnswerItem(id="deploy", selected=["Approve"])
    returned = store.save_partial(original.id, item, actor="U9", channel="slack")
    assert returned == resolved
    assert store.get_question(original.id) == resolved
    late = store.history(question_id=original.id)[-1]
    assert (late.kind, late.actor, late.detail["partial"]) == ("duplicate", "U9", item.to_wire())


def test_a_partial_answer_needs_a_known_question_and_item(store: Store) -> None:
    original = record()
    store.create_question(original)
    with pytest.raises(StoreError, match="q_missing"):
        store.save_partial("q_missing", AskUserQuestionAnswerItem(id="deploy"), actor=None, channel="web")
    with pytest.raises(ValueError, match="nope"):
        store.save_partial(original.id, AskUserQuestionAnswerItem(id="nope"), actor=None, channel="web")
    assert store.get_question(original.id) == original


# -- deliveries ------------------------------------------------------------------------------------------------------


def test_a_reply_finds_its_delivery_by_channel_key(store: Store) -> None:
    one, two = record(), record()
    store.create_question(one)
    store.create_question(two)
    slack = store.add_delivery(one.id, "slack", "C1:100.1", {"ts": "100.1"})
    store.add_delivery(two.id, "slack", "C1:200.2", {"ts": "200.2"})
    email = store.add_delivery(two.id, "email", "C1:100.1", {"token": "same text, other channel"})
    assert store.find_delivery("slack", "C1:100.1") == slack
    assert store.find_delivery("email", "C1:100.1") == email
    assert store.find_delivery("slack", "C1:999.9") is None
    assert store.get_delivery(one.id, "slack") == slack
    assert store.get_delivery(one.id, "email") is None


def test_a_redelivery_on_the_same_channel_replaces_the_first(store: Store) -> None:
    original = record()
    store.create_question(original)
    store.add_delivery(original.id, "slack", "C1:1.0", {"ts": "1.0"})
    again = store.add_delivery(original.id, "slack", "C2:2.0", {"ts": "2.0", "channel": "C2"})
    assert store.deliveries(original.id) == [again]
    assert store.find_delivery("slack", "C1:1.0") is None
    assert store.find_delivery("slack", "C2:2.0") == again
    assert kinds_of(store, original.id) == ["asked", "delivered", "delivered"]


def test_a_delivery_key_belongs_to_one_question_per_channel(store: Store) -> None:
    one, two = record(), record()
    store.create_question(one)
    store.create_question(two)
    store.add_delivery(one.id, "email", "tok", {})
    with pytest.raises(StoreError, match="tok"):
        store.add_delivery(two.id, "email", "tok", {})
    assert store.deliveries(two.id) == []
    assert kinds_of(store, two.id) == ["asked"]


def test_a_delivery_needs_a_known_question(store: Store) -> None:
    with pytest.raises(StoreError, match="q_missing"):
        store.add_delivery("q_missing", "slack", "C1:1.0", {})


# -- listing and history ---------------------------------------------------------------------------------------------


def test_list_questions_filters_orders_and_limits(store: Store) -> None:
    alpha = AgentRef(id="alpha")
    a1 = record(agent=alpha, created_at=T0)
    b1 = record(agent=AgentRef(id="beta"), created_at=T0 + timedelta(seconds=1))
    a2 = record(agent=alpha, created_at=T0 + timedelta(seconds=2))
    none = record(agent=None, created_at=T0 + timedelta(seconds=3))
    for each in (a1, b1, a2, none):
        store.create_question(each)
    store.add_delivery(b1.id, "slack", "k1", {})
    store.add_delivery(none.id, "slack", "k2", {})
    store.add_delivery(a2.id, "email", "k3", {})
    a1 = store.resolve(a1.id, "answered", answer=answer(), by="U1", via="slack").record

    def ids(found: list[QuestionRecord]) -> list[str]:
        return [question.id for question in found]

    assert ids(store.list_questions()) == [none.id, a2.id, b1.id, a1.id]
    assert ids(store.list_questions(newest_first=False)) == [a1.id, b1.id, a2.id, none.id]
    assert ids(store.list_questions(limit=2)) == [none.id, a2.id]
    assert ids(store.list_questions(status="pending")) == [none.id, a2.id, b1.id]
    assert ids(store.list_questions(status="answered")) == [a1.id]
    assert ids(store.list_questions(agent_id="alpha")) == [a2.id, a1.id]
    assert ids(store.list_questions(channel="slack")) == [none.id, b1.id]
    assert ids(store.list_questions(channel="slack", status="pending", agent_id="beta")) == [b1.id]
    assert store.list_questions(status="failed") == []
    assert (store.count_questions(), store.count_questions("pending"), store.count_questions("failed")) == (4, 3, 0)


def test_history_filters_and_pages(store: Store) -> None:
    mine = record(agent=AgentRef(id="alpha"))
    theirs = record(agent=AgentRef(id="beta"))
    store.create_question(mine)
    store.create_question(theirs)
    store.add_delivery(mine.id, "slack", "k1", {})
    store.audit(theirs.id, "refused", channel="slack", actor="U666", detail={"reason": "not allowed"})
    store.resolve(mine.id, "answered", answer=answer(), by="U1", via="slack")
    everything = store.history()
    assert [event.kind for event in everything] == ["asked", "asked", "delivered", "refused", "answered"]
    assert [event.seq for event in everything] == sorted(event.seq for event in everything)
    assert [event.kind for event in store.history(agent_id="alpha")] == ["asked", "delivered", "answered"]
    assert [event.kind for event in store.history(question_id=theirs.id)] == ["asked", "refused"]
    assert [event.kind for event in store.history(kinds=["refused", "answered"])] == ["refused", "answered"]
    assert store.history(kinds=[]) == []
    assert store.history(limit=2) == everything[:2]
    assert store.history(after_seq=everything[2].seq) == everything[3:]
    assert store.history(agent_id="alpha", kinds={"answered"}, after_seq=everything[0].seq) == [everything[4]]


def test_audit_returns_what_history_reads_back(store: Store) -> None:
    original = record()
    store.create_question(original)
    event = store.audit(original.id, "retracted", channel="slack", actor="bot", detail={"pair": (1, 2)})
    assert event.detail == {"pair": [1, 2]}
    assert store.history(kinds=["retracted"]) == [event]


def test_audit_needs_a_known_question_and_kind(store: Store) -> None:
    original = record()
    store.create_question(original)
    with pytest.raises(StoreError, match="q_missing"):
        store.audit("q_missing", "escalated")
    with pytest.raises(ValueError, match="gossip"):
        store.audit(original.id, cast(AuditKind, "gossip"))
    assert kinds_of(store, original.id) == ["asked"]


@pytest.mark.parametrize("statement", ["UPDATE audit SET actor = 'mallory'", "DELETE FROM audit"])
def test_the_audit_log_refuses_updates_and_deletes(store: Store, db_path: Path, statement: str) -> None:
    original = record()
    store.create_question(original)
    before = store.history()
    with sqlite3.connect(db_path) as raw, pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(statement)
    assert store.history() == before


# -- events received -------------------------------------------------------------------------------------------------


def test_an_event_is_new_only_the_first_time_on_its_channel(store: Store) -> None:
    assert store.first_sight("slack", "event:Ev01")
    assert not store.first_sight("slack", "event:Ev01")
    assert store.first_sight("email", "event:Ev01")
    assert store.first_sight("slack", "event:Ev02")


def test_a_seen_event_is_remembered_by_another_connection_on_the_file(db_path: Path) -> None:
    with Store.open(db_path) as before:
        assert before.first_sight("slack", "event:Ev01")
    with Store.open(db_path) as after:
        assert not after.first_sight("slack", "event:Ev01")


def test_seen_events_are_forgotten_after_a_day(store: Store) -> None:
    assert store.first_sight("slack", "event:old", now=T0)
    assert not store.first_sight("slack", "event:old", now=T0 + SEEN_EVENTS_KEPT - timedelta(seconds=1))
    assert store.first_sight("slack", "event:new", now=T0 + SEEN_EVENTS_KEPT + timedelta(seconds=1))
    assert store.first_sight("slack", "event:old", now=T0 + SEEN_EVENTS_KEPT + timedelta(seconds=2))


def test_a_store_of_the_first_schema_is_migrated_keeping_its_questions(db_path: Path) -> None:
    original = record()
    with Store.open(db_path) as current:
        current.create_question(original)
    with sqlite3.connect(db_path) as raw:  # back to schema 1, as the previous handraise left it
        raw.execute("DROP TABLE seen_events")
        raw.execute("DROP TABLE fired")
        raw.execute("DROP TABLE learned_rules")
        raw.execute("DROP TABLE webhook_deliveries")
        raw.execute("DROP TABLE kept_values")
        raw.execute("DROP TABLE push_subscriptions")
        raw.execute("PRAGMA user_version = 1")
    with Store.open(db_path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        assert upgraded.get_question(original.id) == original
        assert upgraded.first_sight("slack", "event:Ev01")


def test_a_store_of_the_second_schema_keeps_its_audit_log_and_its_order(db_path: Path) -> None:
    original = record()
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path, isolation_level=None) as raw:  # a store as schema 2 left it, with three events
        for script in MIGRATIONS[:2]:
            for statement in statements(script):
                raw.execute(statement)
        raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        raw.execute("PRAGMA user_version = 2")
        row = (original.id, "2024-05-01T12:00:00.000000+00:00", "builder-1", "pending")
        raw.execute(
            "INSERT INTO questions VALUES (?, ?, ?, ?, ?)",
            (*row, original.model_dump_json(by_alias=True, exclude_none=True)),
        )
        for kind in ("asked", "delivered", "reminded"):
            raw.execute(
                "INSERT INTO audit (at, question_id, kind, detail_json) VALUES (?, ?, ?, '{}')",
                ("2024-05-01T12:00:00.000000+00:00", original.id, kind),
            )
    raw.close()
    with Store.open(db_path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        assert [(event.seq, event.kind) for event in upgraded.history()] == [
            (1, "asked"),
            (2, "delivered"),
            (3, "reminded"),
        ]
        assert upgraded.audit(original.id, "cancelled").seq == 4
        assert [found.id for found in upgraded.list_questions(agent_id="builder-1")] == [original.id]
    with sqlite3.connect(db_path) as raw, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM audit")
    raw.close()


# -- the file --------------------------------------------------------------------------------------------------------


def test_a_fresh_store_is_at_the_latest_schema_in_wal_mode(store: Store, db_path: Path) -> None:
    assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.integrity_ok()


def test_reopening_does_not_migrate_again(db_path: Path) -> None:
    with Store.open(db_path) as first:
        first.create_question(record())
    with Store.open(db_path) as second:
        assert second.schema_version == SCHEMA_VERSION
        assert second.count_questions() == 1


def test_the_file_and_its_directories_are_created_private(db_path: Path) -> None:
    with Store.open(db_path) as opened:
        assert opened.path == str(db_path)
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600


def test_a_store_written_by_a_newer_handraise_is_refused(db_path: Path) -> None:
    Store.open(db_path).close()
    with sqlite3.connect(db_path) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="upgrade handraise") as raised:
        Store.open(db_path)
    assert raised.value.code == "STORE"


def test_a_file_that_is_not_sqlite_is_refused_by_name(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(8192))
    with pytest.raises(StoreError) as raised:
        Store.open(garbage)
    assert str(garbage) in raised.value.message
    assert not isinstance(raised.value.__cause__, sqlite3.Error)


def test_a_directory_in_the_way_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=re.escape(str(tmp_path))):
        Store.open(tmp_path)


def test_a_database_stamped_by_another_application_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("PRAGMA application_id = 42")
    with pytest.raises(StoreError, match="another application"):
        Store.open(foreign)


def test_another_applications_database_is_left_alone(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(StoreError, match="not a handraise store"):
        Store.open(foreign)
    with sqlite3.connect(foreign) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 0


def test_an_in_memory_store_works() -> None:
    with Store.open(":memory:") as memory:
        original = record()
        memory.create_question(original)
        assert memory.get_question(original.id) == original


def test_a_closed_store_raises_store_errors(db_path: Path) -> None:
    closed = Store.open(db_path)
    closed.close()
    closed.close()
    with pytest.raises(StoreError):
        closed.get_question("q_any")


def test_hostile_strings_are_stored_and_read_back_exactly(db_path: Path) -> None:
    hostile = "'; DROP TABLE questions; --\" \\ ` %s ? :name \u202eevil\u202c 你好 🙋‍♀️ e\u0301 \r\n\t"
    huge = "x" * 1_000_000 + hostile
    item = AskUserQuestionItem(
        id=hostile, question=hostile, detail=huge, options=[AskUserQuestionOption(label=hostile, description=hostile)]
    )
    original = record(agent=AgentRef(id=hostile, name=hostile, labels={hostile: hostile}), questions=[item])
    reply = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id=hostile, selected=[hostile], custom=huge)])
    with Store.open(db_path) as before:
        before.create_question(original)
        delivery = before.add_delivery(original.id, hostile, hostile, {hostile: huge})
        event = before.audit(original.id, "escalated", channel=hostile, actor=hostile, detail={hostile: huge})
        resolved = before.resolve(original.id, "answered", answer=reply, by=hostile, via=hostile).record
    with Store.open(db_path) as after:
        assert after.get_question(original.id) == resolved
        assert resolved.answer == reply
        assert after.find_delivery(hostile, hostile) == delivery
        assert after.history(kinds=["escalated"]) == [event]
        assert event.detail == {hostile: huge}
        assert after.list_questions(agent_id=hostile) == [resolved]
        assert after.count_questions() == 1
        assert after.integrity_ok()


def test_has_delivery_says_whether_a_question_was_shown_on_a_channel(store: Store) -> None:
    shown = record()
    store.create_question(shown)
    store.add_delivery(shown.id, "web", shown.id, {})
    assert store.has_delivery(shown.id, "web")
    assert not store.has_delivery(shown.id, "slack")
    assert not store.has_delivery("q_unknown", "web")


def test_resolving_with_a_stale_copy_keeps_what_was_saved_since(store: Store) -> None:
    stale = record()
    store.create_question(stale)
    partial = AskUserQuestionAnswerItem(id="regions", selected=["eu"])
    store.save_partial(stale.id, partial, actor="bob", channel="email")
    resolution = store.resolve(stale.id, "answered", answer=answer(), by="alice", via="web", seen=stale)
    assert resolution.won
    assert resolution.record.partial == {"regions": partial}
    stored = store.get_question(stale.id)
    assert stored is not None and stored.partial == {"regions": partial} and stored.status == "answered"


def test_resolving_with_the_current_copy_gives_the_same_record_as_without(store: Store) -> None:
    current = record()
    store.create_question(current)
    resolution = store.resolve(current.id, "answered", answer=answer(), by="alice", via="web", seen=current)
    assert resolution.record == store.get_question(current.id)


def test_resolving_copies_of_more_questions_than_the_store_keeps_the_json_of(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.store.sqlite.store.WRITTEN_KEPT", 2)
    asked = [record() for _ in range(4)]
    for each in asked:
        store.create_question(each)
    for each in asked:  # the first two were asked before the last two: their JSON is serialised again
        resolution = store.resolve(each.id, "answered", answer=answer(), by="alice", via="web", seen=each)
        assert resolution.won
        assert resolution.record == store.get_question(each.id)


def test_a_question_asked_in_a_group_with_a_write_that_failed_resolves_from_its_copy(store: Store) -> None:
    kept, twice = record(), record()
    store.create_question(twice)

    def fails() -> None:
        store.create_question(twice)  # its id is taken: this write alone is undone

    outcomes = store.write_together([lambda: store.create_question(kept), fails])
    assert outcomes[0] == (None, None) and isinstance(outcomes[1][1], StoreError)
    resolution = store.resolve(kept.id, "answered", answer=answer(), by="alice", via="web", seen=kept)
    assert resolution.won and resolution.record == store.get_question(kept.id)


def statements_during(store: Store, write: Any) -> list[str]:
    """The SQL statements the store's connection ran during `write()`."""
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)  # pyright: ignore[reportPrivateUsage]
    try:
        write()
    finally:
        store._db.set_trace_callback(None)  # pyright: ignore[reportPrivateUsage]
    return seen


def test_a_group_that_goes_well_runs_its_writes_without_savepoints(store: Store) -> None:
    asked = [record() for _ in range(3)]
    ran = statements_during(store, lambda: store.write_together([lambda r=r: store.create_question(r) for r in asked]))
    assert not [sql for sql in ran if "SAVEPOINT" in sql.upper()]
    assert [sql for sql in ran if sql.startswith(("BEGIN", "COMMIT"))] == ["BEGIN IMMEDIATE", "COMMIT"]
    assert all(store.get_question(each.id) == each for each in asked)


def test_a_write_that_fails_in_a_group_runs_the_group_again_each_in_a_savepoint_and_each_is_made_once(
    store: Store,
) -> None:
    first, taken, last = record(), record(), record()
    store.create_question(taken)
    writes = [
        lambda: store.create_question(first),
        lambda: store.create_question(taken),  # its id is taken: this write alone fails
        lambda: store.create_question(last),
    ]
    outcomes: list[Any] = []
    ran = statements_during(store, lambda: outcomes.extend(store.write_together(writes)))
    assert outcomes[0] == (None, None) and outcomes[2] == (None, None)
    assert isinstance(outcomes[1][1], StoreError)
    assert "ROLLBACK" in ran and [sql for sql in ran if sql.startswith("SAVEPOINT")]
    assert [kinds_of(store, each.id) for each in (first, taken, last)] == [["asked"]] * 3
    rows = store.audit_rows()
    assert verify(rows).lines() == [f"{len(rows)} rows checked"]
