"""Learned rules and rule lines in the store, on both backends: kept, shared by every store on the database, stored
with the answer that taught them, and the audit log's rule lines without a question."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import psycopg
import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, PERMISSION_ID, Permission
from bot.permissions.rules import learned_id, learned_rule
from bot.store.interface import AsyncStore
from bot.store.postgres.schema import MARKER
from bot.store.postgres.schema import MIGRATIONS as PG_MIGRATIONS
from bot.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from bot.store.postgres.store import PostgresStore
from bot.store.records import AgentRef, QuestionRecord
from bot.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, statements
from bot.store.sqlite.store import Store
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem
from tests.bot.store_backends import Opener, store_opener

pytestmark = pytest.mark.anyio

PERMISSION = Permission(agent="codex", project="shop", tool="Bash", kind="shell", request="npm test", detail="npm test")


@pytest.fixture(params=["sqlite", "postgres"])
async def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    async with store_opener(request, tmp_path / "handraise.db") as opener:
        yield opener


@pytest.fixture
async def store(reopen: Opener) -> AsyncStore:
    return await reopen()


def permission_question(permission: Permission = PERMISSION) -> QuestionRecord:
    return QuestionRecord(
        agent=AgentRef(id="sess-1", labels={"tool": "codex"}),
        questions=[AskUserQuestionItem(id=PERMISSION_ID, question="Allow Bash?", detail="npm test")],
        origin="api",
        permission=permission.to_wire(),
    )


def chose(label: str) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id=PERMISSION_ID, selected=[label])])


async def test_a_learned_rule_is_kept_and_seen_by_another_store(store: AsyncStore, reopen: Opener) -> None:
    rule = learned_rule(PERMISSION, question_id="q_1", by="alice")
    assert await store.learn_rule(rule)
    other = await reopen()
    assert await other.learned_rule(rule.id) == rule
    assert await other.learned_rules() == [rule]
    assert await other.learned_rule("learned-0000000000000000") is None


async def test_learning_the_same_request_twice_is_one_rule(store: AsyncStore) -> None:
    first = learned_rule(PERMISSION, by="alice")
    assert await store.learn_rule(first)
    assert not await store.learn_rule(learned_rule(PERMISSION, by="bob"))
    assert await store.learned_rules() == [first]


async def test_a_forgotten_rule_is_gone_for_every_store(store: AsyncStore, reopen: Opener) -> None:
    rule = learned_rule(PERMISSION)
    await store.learn_rule(rule)
    other = await reopen()
    assert await other.forget_rule(rule.id)
    assert not await other.forget_rule(rule.id)
    assert await store.learned_rule(rule.id) is None
    assert await store.learned_rules() == []


@pytest.mark.parametrize("text", ["a\x00b", "back\\slash\\0", "emoji 🙂 and ünïcode", "line\nbreak", "'; DROP TABLE x"])
async def test_hostile_texts_in_a_learned_rule_read_back_exactly(store: AsyncStore, text: str) -> None:
    permission = Permission(agent="cursor", project=text, tool=text, kind="tool", request=text, detail="d")
    rule = learned_rule(permission, question_id=text, by=text)
    await store.learn_rule(rule)
    assert await store.learned_rule(learned_id(permission)) == rule


async def test_always_allow_stores_its_rule_with_the_answer(store: AsyncStore, reopen: Opener) -> None:
    record = permission_question()
    await store.create_question(record)
    rule = learned_rule(PERMISSION, question_id=record.id, by="alice")
    resolution = await store.resolve(record.id, "answered", answer=chose(ALWAYS), by="alice", via="web", learn=rule)
    assert resolution.won
    other = await reopen()
    assert await other.learned_rule(rule.id) == rule
    stored = await other.get_question(record.id)
    assert stored is not None and stored.status == "answered" and stored.permission == PERMISSION.to_wire()
    assert [event.kind for event in await other.history(question_id=record.id)] == ["asked", "answered"]


async def test_a_losing_answer_learns_nothing(store: AsyncStore) -> None:
    record = permission_question()
    await store.create_question(record)
    await store.resolve(record.id, "answered", answer=chose(ALLOW), by="bob", via="slack")
    rule = learned_rule(PERMISSION, question_id=record.id, by="alice")
    late = await store.resolve(record.id, "answered", answer=chose(ALWAYS), by="alice", via="web", learn=rule)
    assert not late.won and late.record.answered_by == "bob"
    assert await store.learned_rules() == []
    assert [event.kind for event in await store.history(question_id=record.id)] == ["asked", "answered", "duplicate"]


async def test_two_always_allows_at_once_learn_one_rule_and_one_wins(store: AsyncStore, reopen: Opener) -> None:
    record = permission_question()
    await store.create_question(record)
    other = await reopen()
    won: list[bool] = []

    async def answer(on: AsyncStore, by: str) -> None:
        rule = learned_rule(PERMISSION, question_id=record.id, by=by)
        resolution = await on.resolve(record.id, "answered", answer=chose(ALWAYS), by=by, via="web", learn=rule)
        won.append(resolution.won)

    async with anyio.create_task_group() as group:
        group.start_soon(answer, store, "alice")
        group.start_soon(answer, other, "bob")
    assert sorted(won) == [False, True]
    assert len(await store.learned_rules()) == 1


async def test_a_rule_line_has_no_question_and_is_the_agents(store: AsyncStore) -> None:
    record = permission_question()
    await store.create_question(record)
    detail = {"rule": {"id": "config-1"}, "decision": "allow"}
    line = await store.audit_rule(actor="sess-1", detail=detail)
    assert (line.question_id, line.kind, line.actor, line.detail) == (None, "rule", "sess-1", detail)
    await store.audit_rule(actor="sess-2", detail=detail)
    await store.audit_rule(actor=None, detail=detail)
    everything = await store.history()
    assert [event.kind for event in everything] == ["asked", "rule", "rule", "rule"]
    assert everything[1] == line
    assert [(e.kind, e.actor) for e in await store.history(agent_id="sess-1")] == [("asked", None), ("rule", "sess-1")]
    assert [e.kind for e in await store.history(question_id=record.id)] == ["asked"]
    assert [e.actor for e in await store.history(kinds=["rule"])] == ["sess-1", "sess-2", None]


# -- an older SQLite file --------------------------------------------------------------------------------------------


def test_a_store_of_schema_4_keeps_its_audit_log_and_gains_learned_rules(tmp_path: Path) -> None:
    path = tmp_path / "handraise.db"
    original = permission_question()
    with sqlite3.connect(path, isolation_level=None) as raw:  # a store as schema 4 left it
        for script in MIGRATIONS[:4]:
            for statement in statements(script):
                raw.execute(statement)
        raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        raw.execute("PRAGMA user_version = 4")
        raw.execute(
            "INSERT INTO questions VALUES (?, '2024-05-01T12:00:00.000000+00:00', 'sess-1', 'pending', ?)",
            (original.id, original.model_dump_json(by_alias=True, exclude_none=True)),
        )
        for kind in ("asked", "delivered"):
            raw.execute(
                "INSERT INTO audit (at, question_id, kind, detail_json) VALUES (?, ?, ?, '{}')",
                ("2024-05-01T12:00:00.000000+00:00", original.id, kind),
            )
    raw.close()
    with Store.open(path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        assert [(event.seq, event.kind) for event in upgraded.history()] == [(1, "asked"), (2, "delivered")]
        assert upgraded.audit_rule(actor="sess-1", detail={}).seq == 3
        assert upgraded.learn_rule(learned_rule(PERMISSION))
        assert upgraded.integrity_ok()
    with sqlite3.connect(path) as raw, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM audit")
    raw.close()


async def test_a_postgres_database_of_schema_4_keeps_its_audit_log_and_gains_learned_rules(postgres_url: str) -> None:
    original = permission_question()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f"CREATE TABLE {MARKER} (version integer NOT NULL)")  # type: ignore[arg-type]
        db.execute(f"INSERT INTO {MARKER} VALUES (4)")  # type: ignore[arg-type]
        for script in PG_MIGRATIONS[:4]:
            db.execute(script.encode())
        db.execute(
            "INSERT INTO questions (id, created_at, agent_id, status, record_json) VALUES (%s, now(), 'sess-1', "
            "'pending', %s)",
            (original.id, original.model_dump_json(by_alias=True, exclude_none=True)),
        )
        db.execute(
            "INSERT INTO audit (at, question_id, kind, detail_json) VALUES (now(), %s, 'asked', '{}')", (original.id,)
        )
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        assert await store.schema_version() == PG_SCHEMA_VERSION
        assert [event.kind for event in await store.history()] == ["asked"]
        line = await store.audit_rule(actor="sess-1", detail={})
        assert line.question_id is None
        assert await store.learn_rule(learned_rule(PERMISSION))
        assert [event.kind for event in await store.history(agent_id="sess-1")] == ["asked", "rule"]
    finally:
        await store.close()
