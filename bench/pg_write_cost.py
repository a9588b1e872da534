"""PostgreSQL's CPU per store write under schema variants, measured in interleaved batches so that load cancels out.

Run: `uv run python bench/pg_write_cost.py [--batches N] [--size N] [--clients N] [--detail-kib N] [VARIANT ...]`
(as root or a user who may run PostgreSQL). Starts a durable throwaway cluster (fsync and synchronous_commit on,
autovacuum off so that it does not land in one batch), one database per variant (the current schema, then the
variant's SQL), one store on each with a LISTEN connection as a change feed has. Batches of SIZE questions are
created, delivered and resolved on each database in turn, alternating which goes first, CLIENTS calls at once (1:
every write is a statement and a commit of its own; more: the store groups concurrent writes). The CPU time of every
process of the cluster (/proc/PID/schedstat, nanoseconds) is summed per call. Other helpers' load inflates every
figure alike: compare the variants of one run, not runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import api_floor_pg
import psycopg

from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem

_UNCHAINED = """
    CREATE OR REPLACE FUNCTION handraise_audit_chained(
        ats timestamptz[], question_ids text[], kinds text[], channels text[], actors text[], details text[]
    ) RETURNS SETOF audit LANGUAGE plpgsql STRICT AS $$
    DECLARE
        made audit;
    BEGIN
        FOR i IN 1 .. coalesce(cardinality(ats), 0) LOOP
            made.seq := nextval('audit_seq_seq');
            made.at := ats[i];
            made.question_id := question_ids[i];
            made.kind := kinds[i];
            made.channel := channels[i];
            made.actor := actors[i];
            made.detail_json := details[i];
            RETURN NEXT made;
        END LOOP;
    END
    $$;
"""
"""The statements' call with no hashing: rows numbered, `prev` and `hash` left NULL."""

VARIANTS: dict[str, str] = {
    "current": "",
    # Schema 3's delivery trigger: every delivery rewrites its question's row to stamp it.
    "question-stamping-delivery": """
        DROP TRIGGER deliveries_changed ON deliveries;
        DROP FUNCTION handraise_delivery_changed();
        DROP INDEX deliveries_by_change;
        CREATE FUNCTION handraise_delivery_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE questions SET changed_at = clock_timestamp() WHERE id = NEW.question_id;
            RETURN NULL;
        END
        $$;
        CREATE TRIGGER deliveries_changed AFTER INSERT OR UPDATE ON deliveries
            FOR EACH ROW EXECUTE FUNCTION handraise_delivery_changed();
    """,
    "pglz": "ALTER TABLE questions ALTER COLUMN record_json SET COMPRESSION pglz;",
    "no-notify": """
        CREATE OR REPLACE FUNCTION handraise_question_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.changed_at := clock_timestamp(); RETURN NEW; END $$;
        CREATE OR REPLACE FUNCTION handraise_delivery_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.changed_at := clock_timestamp(); RETURN NEW; END $$;
    """,
    # Schema 7's audit chain: a per-row trigger hashes each row (the statements' call only numbers them).
    "chain-trigger": _UNCHAINED
    + """
        CREATE FUNCTION handraise_audit_row_chained() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            previous text;
        BEGIN
            SELECT hash INTO previous FROM audit ORDER BY seq DESC LIMIT 1;
            NEW.prev := coalesce(previous, repeat('0', 64));
            NEW.hash := encode(sha256(convert_to(
                handraise_chain_field(NEW.prev) || handraise_chain_field(NEW.seq::text)
                || handraise_chain_field(to_char(NEW.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'))
                || handraise_chain_field(NEW.question_id) || handraise_chain_field(NEW.kind)
                || handraise_chain_field(NEW.channel) || handraise_chain_field(NEW.actor)
                || handraise_chain_field(NEW.detail_json),
                'UTF8')), 'hex');
            RETURN NEW;
        END
        $$;
        CREATE TRIGGER audit_chained BEFORE INSERT ON audit
            FOR EACH ROW EXECUTE FUNCTION handraise_audit_row_chained();
    """,
    # No chain at all (what the chain costs in all).
    "no-chain": _UNCHAINED,
}
"""SQL run on a database at the current schema; "no-notify" only shows what the notifications cost."""

ITEM = {"id": "go", "question": "Deploy build {n}?", "options": [{"label": "Yes"}, {"label": "No"}]}
ANSWER = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="go", selected=["Yes"])])


def question(index: int, detail_kib: int) -> QuestionRecord:
    item = AskUserQuestionItem.model_validate(ITEM | {"question": f"Deploy build {index}?"})
    if detail_kib:
        # A plan to review: numbered steps, about 60 bytes a line, compressible as real text is.
        steps = (f"{step:5d}. migrate table_{step % 97}, check service {step % 13} ({index})" for step in range(10**6))
        lines: list[str] = []
        while sum(map(len, lines)) < detail_kib * 1024:
            lines.append(next(steps))
        item = item.model_copy(update={"detail": "\n".join(lines)})
    return QuestionRecord(questions=[item])


def cluster_cpu(server: Any) -> float:
    """Seconds of CPU the cluster's processes have run, from the scheduler's nanosecond counts."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, parent = int(stat.parent.name), int(stat.read_text().rpartition(")")[2].split()[1])
            if postmaster in (pid, parent):
                total += int((stat.parent / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e9


async def listen(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        await connection.execute("LISTEN handraise_changes")
        async for _ in connection.notifies():
            pass


async def at_once(clients: int, calls: list[Awaitable[Any]]) -> None:
    """Await `calls`, `clients` of them at a time."""
    room = asyncio.Semaphore(clients)

    async def one(call: Awaitable[Any]) -> None:
        async with room:
            await call

    await asyncio.gather(*(one(call) for call in calls))


Call = Callable[[PostgresStore, QuestionRecord], Awaitable[Any]]
CALLS: dict[str, Call] = {
    "create_question": lambda store, record: store.create_question(record),
    "add_delivery": lambda store, record: store.add_delivery(record.id, "web", record.id, {"shown": True}),
    "resolve": lambda store, record: store.resolve(record.id, "answered", answer=ANSWER, by="u", seen=record),
}


async def measure(server: Any, urls: dict[str, str], batches: int, size: int, clients: int, detail_kib: int) -> None:
    stores = {name: await PostgresStore.open(url) for name, url in urls.items()}
    listeners = [asyncio.create_task(listen(url)) for url in urls.values()]
    await asyncio.sleep(0.3)
    spent: dict[str, dict[str, list[float]]] = {name: {call: [] for call in CALLS} for name in urls}
    made = 0
    for batch in range(batches + 1):  # the first batch warms up
        order = list(stores.items())
        for name, store in order if batch % 2 else order[::-1]:
            records = [question(made + index, detail_kib) for index in range(size)]
            made += size
            for call, run in CALLS.items():
                before = cluster_cpu(server)
                await at_once(clients, [run(store, record) for record in records])
                await asyncio.sleep(0.02)  # the listener's share
                if batch:
                    spent[name][call].append((cluster_cpu(server) - before) / size)
    for task in listeners:
        task.cancel()
    for store in stores.values():
        await store.close()
    each = f"{batches} batches of {size}, {clients} at once; detail {detail_kib} KiB"
    print(f"cluster CPU per call, µs (median of {each})")
    print(f"{'variant':<28}" + "".join(f"{call:>17}" for call in CALLS))
    for name, calls in spent.items():
        print(f"{name:<28}" + "".join(f"{statistics.median(times) * 1e6:>17.0f}" for times in calls.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description="PostgreSQL's CPU per store write under schema variants")
    parser.add_argument("variants", nargs="*", default=["current", "question-stamping-delivery"], choices=VARIANTS)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--size", type=int, default=150)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--detail-kib", type=int, default=0)
    options = parser.parse_args()
    with api_floor_pg.durable_cluster() as (server, url):
        with server.admin() as admin:
            admin.execute("ALTER SYSTEM SET autovacuum = off")
            admin.execute("SELECT pg_reload_conf()")
        urls: dict[str, str] = {}
        for name in options.variants:
            database = server.create_database()
            urls[name] = f"{url.rpartition('/')[0]}/{database}"

            async def migrate(target: str = urls[name]) -> None:
                await (await PostgresStore.open(target)).close()

            asyncio.run(migrate())
            if VARIANTS[name]:
                with server.admin(database) as db:
                    db.execute(VARIANTS[name].encode())
        asyncio.run(measure(server, urls, options.batches, options.size, options.clients, options.detail_kib))


if __name__ == "__main__":
    main()
