"""The audit log as a hash chain, on both backends: every row chained in its own transaction, across restarts and
replicas, and an edited or cut log named at its first broken row (`bot.store.chain`)."""

from __future__ import annotations

import hashlib
import itertools
import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import cast

import anyio
import psycopg
import pytest

from bot.store.chain import GENESIS, ChainRow, ExportError, chain_hash, export_line, read_export_line, row_hash, verify
from bot.store.interface import AsyncStore
from bot.store.postgres.schema import MARKER
from bot.store.postgres.schema import MIGRATIONS as PG_MIGRATIONS
from bot.store.postgres.store import PostgresStore
from bot.store.records import NewDelivery
from bot.store.sqlite.async_store import SqliteStore
from bot.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, statements
from bot.store.sqlite.store import Store
from tests.postgres_server import PostgresServer

from .store_backends import Opener, answer, record

pytestmark = pytest.mark.anyio

Raw = Callable[[str], None]
"""Runs one statement on the store's database behind handraise's back, append-only triggers off (a tamperer)."""


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Opener, Raw]]:
    opened: list[AsyncStore] = []
    if request.param == "sqlite":
        path = tmp_path / "handraise.db"

        async def open_one() -> AsyncStore:
            opened.append(SqliteStore.open(path))
            return opened[-1]

        def raw(statement: str) -> None:
            with sqlite3.connect(path) as db:
                db.execute("DROP TRIGGER IF EXISTS audit_no_update")
                db.execute("DROP TRIGGER IF EXISTS audit_no_delete")
                db.execute(statement)
            db.close()

    else:
        url = cast(str, request.getfixturevalue("postgres_url"))
        server = cast(PostgresServer, request.getfixturevalue("postgres_server"))

        async def open_one() -> AsyncStore:
            opened.append(await PostgresStore.open(url, wait_seconds=2))
            return opened[-1]

        def raw(statement: str) -> None:
            with server.admin(url.rsplit("/", 1)[1]) as db:
                db.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
                db.execute(statement.encode())
                db.execute("ALTER TABLE audit ENABLE TRIGGER audit_no_change")

    yield open_one, raw
    for store in opened:
        await store.close()


async def all_rows(store: AsyncStore) -> list[ChainRow]:
    return await store.audit_rows(limit=10_000)


async def some_events(store: AsyncStore) -> None:
    first, second = record(), record()
    await store.create_question(first, NewDelivery("web", f"k-{first.id}", {"at": 1}))
    await store.create_question(second)
    await store.add_delivery(second.id, "email", f"k-{second.id}", {"to": "ops@example.org"})
    await store.resolve(first.id, "answered", answer=answer(), by="alice", via="web", seen=first)
    await store.audit(second.id, "escalated", channel="email", actor="bøt ✓", detail={"to": "slack\nnewline ü"})
    await store.audit_rule(actor="agent-7", detail={"decision": "allow"})
    await store.resolve(second.id, "cancelled", error_code="ASK_CANCELLED", error_message="gone")


async def test_every_row_is_chained_from_64_zeros(backend: tuple[Opener, Raw]) -> None:
    store = await backend[0]()
    await some_events(store)
    rows = await all_rows(store)
    assert len(rows) == 8
    assert rows[0].prev == GENESIS
    for before, row in itertools.pairwise(rows):
        assert row.prev == before.hash
    for row in rows:
        assert row.hash is not None and re.fullmatch(r"[0-9a-f]{64}", row.hash)
        assert row.hash == row_hash(row, row.prev or "")
    assert verify(rows).lines() == ["8 rows checked"]


async def test_history_shows_each_events_hash_and_prev(backend: tuple[Opener, Raw]) -> None:
    store = await backend[0]()
    written = await store.audit_rule(actor="agent-7", detail={"decision": "deny"})
    events = await store.history()
    rows = await all_rows(store)
    assert [(event.seq, event.prev, event.hash) for event in events] == [(row.seq, row.prev, row.hash) for row in rows]
    assert (written.prev, written.hash) == (rows[-1].prev, rows[-1].hash)


async def test_the_chain_continues_after_a_restart(backend: tuple[Opener, Raw]) -> None:
    opener, _ = backend
    first = await opener()
    await some_events(first)
    await first.close()
    again = await opener()
    await some_events(again)
    assert verify(await all_rows(again)).lines() == ["16 rows checked"]


async def test_two_stores_on_one_database_append_one_chain(backend: tuple[Opener, Raw]) -> None:
    opener, _ = backend
    one, two = await opener(), await opener()
    async with anyio.create_task_group() as group:
        for store in (one, two, one, two):
            group.start_soon(some_events, store)
    assert verify(await all_rows(one)).lines() == ["32 rows checked"]


async def test_an_edited_row_is_named(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    await some_events(store)
    raw("UPDATE audit SET actor = 'mallory' WHERE seq = 5")
    assert verify(await all_rows(store)).lines() == ["seq 5"]


async def test_an_edited_detail_is_named(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    await some_events(store)
    raw("""UPDATE audit SET detail_json = '{"decision": "deny"}' WHERE seq = 7""")
    assert verify(await all_rows(store)).lines() == ["seq 7"]


async def test_a_deleted_row_is_named_by_the_one_after_it(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    await some_events(store)
    raw("DELETE FROM audit WHERE seq = 3")
    assert verify(await all_rows(store)).lines() == ["seq 4"]


async def test_a_rehashed_row_breaks_the_next_one(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    await some_events(store)
    row = (await all_rows(store))[1]
    forged = chain_hash(
        row.prev or "", row.seq, row.at, row.question_id, row.kind, row.channel, "mallory", row.detail_json
    )
    raw(f"UPDATE audit SET actor = 'mallory', hash = '{forged}' WHERE seq = 2")
    assert verify(await all_rows(store)).lines() == ["seq 3"]


async def test_a_store_cut_at_the_start_is_named(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    await some_events(store)
    raw("DELETE FROM audit WHERE seq <= 2")
    assert verify(await all_rows(store)).lines() == ["seq 3"]


async def test_rows_from_before_the_chain_are_counted_apart(backend: tuple[Opener, Raw]) -> None:
    opener, raw = backend
    store = await opener()
    for _ in range(3):  # as an older handraise wrote them: no prev, no hash
        raw("INSERT INTO audit (at, kind, detail_json) VALUES ('2024-05-01T12:00:00+00:00', 'rule', '{}')")
    raw("UPDATE audit SET prev = NULL, hash = NULL")
    assert verify(await all_rows(store)).lines() == [
        "0 rows checked",
        "no row is chained yet: the 3 rows were written before this store kept one",
    ]
    await some_events(store)
    rows = await all_rows(store)
    assert rows[3].prev == GENESIS
    assert verify(rows).lines() == [
        "8 rows checked",
        "the chain starts at seq 4: the 3 rows before it were written before this store kept one, and are not covered",
    ]
    raw("UPDATE audit SET prev = NULL, hash = NULL WHERE seq = 6")  # an unchained row after the chain started
    assert verify(await all_rows(store)).lines() == ["seq 6"]


def test_a_schema_5_sqlite_file_is_migrated_and_its_chain_starts_after(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:5]:
        for statement in statements(script):
            raw.execute(statement)
    raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    raw.execute("PRAGMA user_version = 5")
    for _ in range(2):
        raw.execute(
            "INSERT INTO audit (at, kind, detail_json) VALUES ('2024-05-01T12:00:00.000000+00:00', 'rule', '{}')"
        )
    raw.close()
    with Store.open(path) as store:
        store.audit_rule(actor="agent-7", detail={})
        rows = store.audit_rows()
    assert [(row.seq, row.prev) for row in rows] == [(1, None), (2, None), (3, GENESIS)]
    assert verify(rows).lines()[0] == "1 rows checked"


async def test_a_postgres_store_chained_by_the_trigger_is_migrated_and_its_chain_goes_on(postgres_url: str) -> None:
    # Schema 7 chained each row in a per-row trigger; schema 8 chains each statement's rows in one call instead.
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f"CREATE TABLE {MARKER} (version integer NOT NULL)")  # type: ignore[arg-type]
        db.execute(f"INSERT INTO {MARKER} VALUES (7)")  # type: ignore[arg-type]
        for script in PG_MIGRATIONS[:7]:
            db.execute(script.encode())
        for detail in ('{"n": 1}', '{"n": "ü ✓"}'):  # chained by the trigger, as a schema-7 handraise wrote them
            db.execute(
                "INSERT INTO audit (at, kind, actor, detail_json) VALUES (now(), 'rule', 'agent-7', %s)", (detail,)
            )
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        assert await store.schema_version() == len(PG_MIGRATIONS)
        await some_events(store)
        rows = await all_rows(store)
    finally:
        await store.close()
    assert [row.seq for row in rows] == list(range(1, 11))
    assert rows[0].prev == GENESIS and rows[2].prev == rows[1].hash
    assert verify(rows).lines() == ["10 rows checked"]
    with psycopg.connect(postgres_url, autocommit=True) as db:
        triggers = db.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit'::regclass AND NOT tgisinternal")
        assert {name for (name,) in triggers} == {"audit_no_change", "audit_no_truncate"}


async def test_two_stores_appending_in_groups_at_once_make_one_chain(backend: tuple[Opener, Raw]) -> None:
    opener, _ = backend
    stores = [await opener() for _ in range(3)]
    async with anyio.create_task_group() as group:
        for _ in range(8):
            for store in stores:
                group.start_soon(some_events, store)
    rows = await all_rows(stores[0])
    assert verify(rows).lines() == [f"{8 * 3 * 8} rows checked"]
    assert [row.seq for row in rows] == sorted(row.seq for row in rows)


def test_an_export_line_reads_back_as_the_same_row() -> None:
    row = ChainRow(7, "2024-05-01T12:00:00.000000+00:00", None, "rule", None, "a\x00b", '{"x":"ü"}', GENESIS, "ab")
    assert read_export_line(export_line(row), 1) == row


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "[]",
        '{"seq": 1}',
        "{" * 100_000,
        '{"seq": "1", "at": "", "question_id": null, "kind": "", "channel": null, "actor": null, "detail_json": "",'
        ' "prev": null, "hash": null}',
        '{"seq": true, "at": "", "question_id": null, "kind": "", "channel": null, "actor": null, "detail_json": "",'
        ' "prev": null, "hash": null}',
        '{"seq": 1, "at": 5, "question_id": null, "kind": "", "channel": null, "actor": null, "detail_json": "",'
        ' "prev": null, "hash": null}',
        '{"seq": 1, "at": "", "question_id": [], "kind": "", "channel": null, "actor": null, "detail_json": "",'
        ' "prev": null, "hash": null}',
        '{"seq": 1, "at": "", "question_id": null, "kind": "", "channel": null, "actor": null, "detail_json": "",'
        ' "prev": null, "hash": null, "extra": 1}',
    ],
)
def test_an_export_line_that_is_not_a_row_is_refused_naming_its_line(line: str) -> None:
    with pytest.raises(ExportError, match=r"^line 9"):
        read_export_line(line, 9)


@pytest.mark.parametrize("grouped", [False, True])
def test_an_append_undone_by_a_rollback_is_not_chained_to(tmp_path: Path, grouped: bool) -> None:
    with Store.open(tmp_path / "handraise.db") as store:
        store.audit_rule(actor="kept", detail={})

        def appends_then_fails() -> None:
            with store._write() as db:  # pyright: ignore[reportPrivateUsage]
                store._chain(db, ("2024-05-01T12:00:00.000000+00:00", None, "rule", None, "undone", "{}"))  # pyright: ignore[reportPrivateUsage]
                raise RuntimeError("the transaction is rolled back")

        if grouped:
            [(_, error)] = store.write_together([appends_then_fails])
            assert isinstance(error, RuntimeError)
        else:
            with pytest.raises(RuntimeError):
                appends_then_fails()
        store.audit_rule(actor="after", detail={})
        rows = store.audit_rows()
    assert [row.actor for row in rows] == ["kept", "after"]
    assert verify(rows).lines() == ["2 rows checked"]


@pytest.mark.parametrize(
    ("question_id", "channel", "actor", "detail"),
    [
        ("q_1", "web", "ana", '{"agent":"a"}'),
        (None, None, None, "{}"),
        ("q_2", None, "zoë", '{"text":"naïve ✓"}'),
        ("q_\ud800", "slack", None, "{}"),
    ],
)
def test_a_rows_hash_is_sha256_of_its_fields_each_prefixed_with_its_utf8_length(
    question_id: str | None, channel: str | None, actor: str | None, detail: str
) -> None:
    """The encoding other tools verify the chain by: `len:value,` per field in UTF-8 bytes, `-,` for none."""
    fields = ("b" * 64, "7", "2026-12-06T07:00:00.000000Z", question_id, "asked", channel, actor, detail)
    text = b"".join(
        b"-," if value is None else b"%d:%s," % (len(encoded := value.encode("utf-8", "surrogatepass")), encoded)
        for value in fields
    )
    expected = hashlib.sha256(text).hexdigest()
    assert chain_hash("b" * 64, 7, fields[2], question_id, "asked", channel, actor, detail) == expected
