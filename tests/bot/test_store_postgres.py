"""What only the PostgreSQL store has: a URL, a server that can be unreachable or go away and come back, a database
that may belong to someone else. The shared contract is in test_store_contract.py."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from typing import Any

import anyio
import psycopg
import pytest

from bot.store.errors import StoreError, StoreUnavailable
from bot.store.postgres.rows import record_json
from bot.store.postgres.schema import AUDIT_LOCK, MARKER, MIGRATIONS, SCHEMA_VERSION
from bot.store.postgres.store import PostgresStore
from bot.store.records import Approval, QuestionRecord
from core import AskUserQuestionAnswerItem
from tests.postgres_server import PASSWORD, PostgresServer, free_port

from .store_backends import answer, record, two_questions

pytestmark = pytest.mark.anyio


def database_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    opened = await PostgresStore.open(postgres_url, wait_seconds=2)
    yield opened
    await opened.close()


def raw(server: PostgresServer, url: str) -> psycopg.Connection:
    return server.admin(database_of(url))


# -- opening ---------------------------------------------------------------------------------------------------------


async def test_the_description_names_host_port_and_database_only(store: PostgresStore, postgres_url: str) -> None:
    host_port = postgres_url.split("@", 1)[1]
    assert store.description == f"PostgreSQL at {host_port}"


async def test_a_closed_port_at_open_is_unavailable_naming_the_database_not_the_password(
    postgres_server: PostgresServer,
) -> None:
    port = free_port()
    with pytest.raises(StoreUnavailable) as raised:
        await PostgresStore.open(postgres_server.url("handraise", port=port), wait_seconds=2)
    message = raised.value.message
    assert raised.value.code == "STORE_UNAVAILABLE"
    assert f"PostgreSQL at 127.0.0.1:{port}/handraise" in message
    assert "running" in message
    assert PASSWORD not in message


async def test_a_wrong_password_is_unavailable_saying_to_check_the_credentials(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    wrong = "not-" + secrets.token_hex(8)
    with pytest.raises(StoreUnavailable) as raised:
        await PostgresStore.open(postgres_server.url(database_of(postgres_url), password=wrong), wait_seconds=2)
    message = raised.value.message
    assert "user and password" in message
    assert wrong not in message and PASSWORD not in message


async def test_a_missing_database_is_unavailable_saying_to_create_it(postgres_server: PostgresServer) -> None:
    with pytest.raises(StoreUnavailable, match="createdb") as raised:
        await PostgresStore.open(postgres_server.url("no_such_db"), wait_seconds=2)
    assert f"127.0.0.1:{postgres_server.port}/no_such_db" in raised.value.message


async def test_a_host_that_does_not_resolve_is_unavailable_by_name() -> None:
    with pytest.raises(StoreUnavailable, match=r"nosuch\.invalid:5432/handraise"):
        await PostgresStore.open("postgresql://u:secret-pw@nosuch.invalid/handraise", wait_seconds=2)


@pytest.mark.parametrize("url", ["postgresql://[::1", "postgresql://h/db?sslmode=sideways", "not a url = = ="])
async def test_a_garbage_url_is_a_store_error_without_the_url(url: str) -> None:
    with pytest.raises(StoreError) as raised:
        await PostgresStore.open(url, wait_seconds=2)
    assert url not in raised.value.message


async def test_a_database_written_by_a_newer_handraise_is_refused(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str
) -> None:
    with raw(postgres_server, postgres_url) as db:
        db.execute(f"UPDATE {MARKER} SET version = %s", (SCHEMA_VERSION + 1,))  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="upgrade handraise") as raised:
        await PostgresStore.open(postgres_url, wait_seconds=2)
    assert raised.value.code == "STORE"


async def test_another_applications_database_is_refused_and_left_alone(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    with raw(postgres_server, postgres_url) as db:
        db.execute("CREATE TABLE notes (body text)")
    with pytest.raises(StoreError, match="not a handraise store"):
        await PostgresStore.open(postgres_url, wait_seconds=2)
    with raw(postgres_server, postgres_url) as db:
        tables = db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == [("notes",)]


async def test_a_fresh_database_is_at_the_latest_schema(store: PostgresStore) -> None:
    assert await store.schema_version() == SCHEMA_VERSION
    assert await store.integrity_ok()


def at_schema_3_with_a_delivered_question(url: str) -> QuestionRecord:
    """The database as a handraise of schema 3 left it, holding one question delivered on the web."""
    original = record()
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE TABLE {MARKER} (version integer NOT NULL)")  # type: ignore[arg-type]
        db.execute(f"INSERT INTO {MARKER} VALUES (3)")  # type: ignore[arg-type]
        for script in MIGRATIONS[:3]:
            db.execute(script.encode())
        db.execute(
            "INSERT INTO questions (id, created_at, agent_id, status, record_json) VALUES (%s, %s, %s, %s, %s)",
            (original.id, original.created_at, "builder-1", "pending", record_json(original)),
        )
        db.execute(
            "INSERT INTO deliveries (question_id, channel, key, ref_json, created_at) "
            "VALUES (%s, 'web', 'k', '{}', now())",
            (original.id,),
        )
    return original


def questions_stamp(url: str, question_id: str) -> datetime:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT changed_at FROM questions WHERE id = %s", (question_id,)).fetchone()
    assert row is not None
    return row[0]


async def test_a_schema_3_database_is_migrated_keeping_its_questions_deliveries_and_change_stamps(
    postgres_url: str,
) -> None:
    original = at_schema_3_with_a_delivered_question(postgres_url)
    stamped = questions_stamp(postgres_url, original.id)
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        assert await store.get_question(original.id) == original
        assert [delivery.key for delivery in await store.deliveries(original.id)] == ["k"]
        # The delivery was already counted in its question's stamp: the feed reads the same stamp as before.
        [(_, read, channels)] = await store.changed_questions([original.id])
        assert (read, channels) == (stamped, ("web",))
        _, changed = await store.changed_since(None)
        assert changed == []
    finally:
        await store.close()
    with psycopg.connect(postgres_url) as db:
        compression = db.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'questions'::regclass AND attname = 'record_json'"
        ).fetchone()
    assert compression == ("l",)  # lz4 for records written from now on


async def test_migrating_again_changes_nothing(postgres_url: str) -> None:
    original = at_schema_3_with_a_delivered_question(postgres_url)
    await (await PostgresStore.open(postgres_url, wait_seconds=2)).close()
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        assert [delivery.key for delivery in await store.deliveries(original.id)] == ["k"]
    finally:
        await store.close()


async def test_a_delivery_after_the_migration_moves_its_questions_change_stamp_and_leaves_the_question_row_alone(
    postgres_url: str,
) -> None:
    original = at_schema_3_with_a_delivered_question(postgres_url)
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        stamped = questions_stamp(postgres_url, original.id)
        await store.add_delivery(original.id, "slack", "C1/1.0", {"ts": "1.0"})
        [(_, read, channels)] = await store.changed_questions([original.id])
        assert questions_stamp(postgres_url, original.id) == stamped
    finally:
        await store.close()
    assert read > stamped
    assert channels == ("slack", "web")


# -- what is stored --------------------------------------------------------------------------------------------------


async def test_questions_are_kept_in_their_camel_case_wire_form(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str
) -> None:
    original = record()
    await store.create_question(original)
    with raw(postgres_server, postgres_url) as db:
        row = db.execute("SELECT record_json FROM questions WHERE id = %s", (original.id,)).fetchone()
    assert row is not None and '"multiSelect":true' in row[0] and "multi_select" not in row[0]


async def test_a_long_record_is_compressed_with_lz4_and_read_back_whole(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str
) -> None:
    items = two_questions()
    plan = "\n".join(f"{step}. migrate table_{step % 97}, then check service {step % 13}" for step in range(2000))
    original = record(questions=[items[0].model_copy(update={"detail": plan}), items[1]])
    await store.create_question(original)
    with raw(postgres_server, postgres_url) as db:
        row = db.execute("SELECT pg_column_compression(record_json) FROM questions WHERE id = %s", (original.id,))
        assert row.fetchone() == ("lz4",)  # Debian's server is built with lz4
    assert await store.get_question(original.id) == original


@pytest.mark.parametrize("statement", ["UPDATE audit SET actor = 'mallory'", "DELETE FROM audit", "TRUNCATE audit"])
async def test_the_audit_log_refuses_updates_and_deletes(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str, statement: str
) -> None:
    await store.create_question(record())
    before = await store.history()
    with raw(postgres_server, postgres_url) as db, pytest.raises(psycopg.Error, match="append-only"):
        db.execute(statement)  # type: ignore[arg-type]
    assert await store.history() == before


async def test_a_key_too_long_for_an_index_is_a_store_error_and_records_nothing(store: PostgresStore) -> None:
    original = record()
    await store.create_question(original)
    key = secrets.token_hex(20_000)  # random: PostgreSQL cannot compress it under its index entry limit
    with pytest.raises(StoreError, match="too long") as raised:
        await store.add_delivery(original.id, "slack", key, {})
    assert not isinstance(raised.value, StoreUnavailable)
    assert await store.deliveries(original.id) == []


# -- a server that goes away -----------------------------------------------------------------------------------------


async def test_a_stopped_server_is_unavailable_at_once_and_used_again_once_back(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = await PostgresStore.open(postgres_url, wait_seconds=0.5)
    try:
        kept = record()
        await store.create_question(kept)
        postgres_server.stop()
        try:
            with pytest.raises(StoreUnavailable) as raised:
                await store.create_question(record())
            assert store.description in raised.value.message
            assert PASSWORD not in raised.value.message
            with pytest.raises(StoreUnavailable):
                await store.get_question(kept.id)
        finally:
            postgres_server.start()
        assert await store.get_question(kept.id) == kept
        later = record()
        await store.create_question(later)
        assert await store.count_questions() == 2
    finally:
        await store.close()


async def test_a_restart_between_calls_is_not_noticed(postgres_server: PostgresServer, postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        kept = record()
        await store.create_question(kept)
        postgres_server.stop()
        postgres_server.start()
        assert await store.get_question(kept.id) == kept
    finally:
        await store.close()


async def test_pooled_connections_whose_sessions_the_server_ended_are_replaced_before_a_call_uses_them(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        kept = record()
        await store.create_question(kept)
        with raw(postgres_server, postgres_url) as admin:
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        assert ended and all(row == (True,) for row in ended)
        assert await store.get_question(kept.id) == kept
    finally:
        await store.close()


Write = Callable[[PostgresStore, QuestionRecord], Coroutine[Any, Any, object]]

WRITES: dict[str, tuple[Write, str]] = {
    "audit": (lambda store, original: store.audit(original.id, "reminded"), "reminded"),
    "ask": (lambda store, original: store.create_question(record()), "asked"),
    "delivery": (lambda store, original: store.add_delivery(original.id, "slack", "C1:1.0", {}), "delivered"),
    "answer": (
        lambda store, original: store.resolve(original.id, "answered", answer=answer(), seen=original),
        "answered",
    ),
    "partial": (
        lambda store, original: store.save_partial(
            original.id, AskUserQuestionAnswerItem(id="deploy", selected=["No"]), actor="U1", channel="slack"
        ),
        "partial",
    ),
    "approval": (
        lambda store, original: store.add_approval(original.id, Approval(by="U1", via="slack", identity="U1")),
        "approved",
    ),
    "cancel": (
        lambda store, original: store.resolve(original.id, "cancelled", error_code="GONE", error_message="gone"),
        "cancelled",
    ),
}


async def wait_for_a_waiting_lock(watcher: psycopg.Connection, locktype: str) -> None:
    with anyio.fail_after(10):
        while not watcher.execute(
            # A transaction id's lock belongs to no database: the cluster is this test's alone then.
            "SELECT 1 FROM pg_locks WHERE locktype = %s AND NOT granted AND coalesce(database, "
            "(SELECT oid FROM pg_database WHERE datname = current_database())) = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())",
            (locktype,),
        ).fetchone():
            await anyio.sleep(0.01)


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
async def test_an_audit_event_waits_for_an_earlier_uncommitted_one_so_seq_order_is_commit_order(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str, write: tuple[Write, str]
) -> None:
    act, kind = write
    original = record()
    await store.create_question(original)
    with raw(postgres_server, postgres_url) as other, raw(postgres_server, postgres_url) as watcher:
        # Another replica's audit insert, taken as far as just before its COMMIT.
        other.execute("BEGIN")
        other.execute(
            "INSERT INTO audit (at, question_id, kind, detail_json) SELECT now(), %s, 'escalated', '{}' "
            "FROM pg_advisory_xact_lock(%s, %s) RETURNING seq",
            (original.id, *AUDIT_LOCK),
        )
        async with anyio.create_task_group() as group:
            group.start_soon(act, store, original)
            await wait_for_a_waiting_lock(watcher, "advisory")  # the store's call is queued behind the other
            assert [event.kind for event in await store.history()] == ["asked"]
            other.execute("COMMIT")
    assert [event.kind for event in await store.history()] == ["asked", "escalated", kind]


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
async def test_a_write_waiting_for_its_questions_row_holds_no_audit_lock_so_the_rows_holder_can_audit(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str, write: tuple[Write, str]
) -> None:
    act, kind = write
    original = record()
    await store.create_question(original)
    with raw(postgres_server, postgres_url) as other, raw(postgres_server, postgres_url) as watcher:
        other.execute("SET lock_timeout = '10s'")
        # Another replica resolving the question: it holds the row, then appends its audit event.
        other.execute("BEGIN")
        other.execute("SELECT 1 FROM questions WHERE id = %s FOR NO KEY UPDATE", (original.id,))
        async with anyio.create_task_group() as group:
            group.start_soon(act, store, original)
            if kind != "asked" and kind != "reminded":  # these two need no row of an existing question
                await wait_for_a_waiting_lock(watcher, "transactionid")
            other.execute(
                "INSERT INTO audit (at, question_id, kind, detail_json) SELECT now(), %s, 'escalated', '{}' "
                "FROM pg_advisory_xact_lock(%s, %s)",
                (original.id, *AUDIT_LOCK),
            )
            other.execute("COMMIT")
    assert [event.kind for event in await store.history()] == ["asked", "escalated", kind]
