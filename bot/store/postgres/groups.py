"""Group commit on PostgreSQL: the concurrent writes of one kind made by one statement, under one commit.

Each PostgreSQL statement costs serve about as much CPU as the rest of a request (psycopg, the socket, the loop) and
the server a commit and an fsync; under load many asks and answers want the same kind of write at once. So a kind
of write (a new question, a delivery, a change of a question's record) runs one group at a time: while one group's
statement runs, the writes asked for queue up, and the next group is all of them, one multi-row statement (`unnest`
of arrays, the audit rows in the same statement) and one commit. A write alone is a group of one: one statement, as
before. Each write still behaves as its own:

- its caller resumes only once the group's statement has returned, that is once its commit is on disk;
- a write whose group fails for something one row can cause (a unique key, a missing question, a deadlock) is made
  again alone with the others of the group, so that it fails alone and the others are made;
- a write is made even when its caller is cancelled after asking for it (its caller sees the cancellation), as the
  SQLite store does: what was sent is recorded;
- a group holds at most one write per key (a question's id): a second one waits for the next group, so that it sees
  the first one's effect — of two answers to one question the first asked for wins.

The read every reply makes (its delivery and question) is grouped the same way: one query for many.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Generic, LiteralString, TypeVar

import psycopg

Item = TypeVar("Item")
Result = TypeVar("Result")


class Grouped(Generic[Item, Result]):
    """The calls of one kind, run in groups by `run` (the group's items in the order asked → each one's outcome,
    result or exception, in the same order; raising fails the whole group).

    A group runs in a task of its own, so that a caller cancelled meanwhile does not cancel a write. A read (`reads`)
    has nothing to lose to a cancellation: alone, it runs in its caller's task, which saves the task and two turns of
    the event loop (about 100 µs of CPU here); the reads asked for meanwhile are grouped after it.
    """

    def __init__(
        self,
        run: Callable[[Sequence[Item]], Awaitable[Sequence[Any]]],
        key: Callable[[Item], Hashable],
        *,
        reads: bool = False,
    ) -> None:
        self._run = run
        self._key = key
        self._reads = reads
        self._queued: list[tuple[Item, asyncio.Future[Any]]] = []
        self._running: asyncio.Task[None] | None = None
        self._reading_alone = False
        """A read alone runs in its caller's task."""
        self.groups = 0
        """Groups run (for tests: concurrent calls share one)."""

    async def __call__(self, item: Item) -> Result:
        if self._reads and self._running is None and not self._reading_alone:
            return await self._read_alone(item)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queued.append((item, future))
        if self._running is None and not self._reading_alone:
            self._start()
        return await future

    async def _read_alone(self, item: Item) -> Result:
        self._reading_alone = True
        try:
            self.groups += 1
            outcome = (await self._outcomes([item]))[0]
        finally:
            self._reading_alone = False
            if self._queued:
                self._start()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _start(self) -> None:
        self._running = asyncio.create_task(self._run_groups())
        self._running.add_done_callback(self._ended)

    async def finish(self) -> None:
        """Wait until every write asked for so far is made (for closing the store)."""
        while self._running is not None:
            await asyncio.shield(self._running)

    async def _run_groups(self) -> None:
        group: list[tuple[Item, asyncio.Future[Any]]] = []
        try:
            while self._queued:
                group = self._next_group()
                self.groups += 1
                outcomes = await self._outcomes([item for item, _ in group])
                for (_, future), outcome in zip(group, outcomes, strict=True):
                    if future.cancelled():  # its caller was cancelled meanwhile; the write stands
                        continue
                    if isinstance(outcome, Exception):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
                group = []
        except asyncio.CancelledError:
            self._cancel_callers(group)
            raise
        finally:
            self._running = None  # here, not in a done callback: a caller resumed meanwhile may ask for more

    def _ended(self, task: asyncio.Task[None]) -> None:
        if self._running is task:  # cancelled before it ever ran (its `finally` never did)
            self._running = None
            self._cancel_callers([])

    def _cancel_callers(self, group: list[tuple[Item, asyncio.Future[Any]]]) -> None:
        """The group's task is cancelled (the event loop is closing): no caller may wait for ever. What their writes
        became is unknown, as for a caller cancelled in its own statement."""
        for _, future in [*group, *self._queued]:
            future.cancel()
        self._queued = []

    def _next_group(self) -> list[tuple[Item, asyncio.Future[Any]]]:
        """The queued writes in the order asked, but one per key: later ones of a key wait for the next group."""
        group: list[tuple[Item, asyncio.Future[Any]]] = []
        later: list[tuple[Item, asyncio.Future[Any]]] = []
        keys: set[Hashable] = set()
        for queued in self._queued:
            key = self._key(queued[0])
            (later if key in keys else group).append(queued)
            keys.add(key)
        self._queued = later + self._queued[len(group) + len(later) :]
        return group

    async def _outcomes(self, items: list[Item]) -> Sequence[Any]:
        try:
            return await self._run(items)
        except SplitGroup:
            # Something one write can cause failed the statement, which made none of them: each again, alone.
            return [await self._alone(item) for item in items]
        except Exception as error:  # the group failed as a whole (the server is away): none of them was made
            return [error] * len(items)

    async def _alone(self, item: Item) -> Any:
        try:
            return (await self._run([item]))[0]
        except Exception as error:
            return error


class SplitGroup(Exception):
    """Raised by a group's `run` when its statement failed for something a single write can cause: each write of the
    group is then made alone."""


_WHOLE_GROUP_CLASSES = ("08", "53", "57", "58", "XX")
"""SQLSTATE classes of errors no row causes: a connection lost, resources, the server shutting down or failing."""


def split_on(error: psycopg.Error, size: int) -> bool:
    """Whether a group of `size` whose statement raised `error` should be made again write by write: for any error a
    row can cause (a constraint, a deadlock between rows), not for a lost connection or server, which would fail
    each of them again."""
    if size < 2 or error.sqlstate is None:  # None: raised by psycopg itself (the connection is gone)
        return False
    return not error.sqlstate.startswith(_WHOLE_GROUP_CLASSES)


# The statements. Every row lock comes first (the written rows, and the questions of the deliveries written), then
# the audit lock (`PostgresStore._append`: held to the commit, it makes the audit log's commit order its `seq`
# order), then the audit rows and their seqs, then the commit, which follows at once on the server. The lock is taken
# once, on the count of what was written: the count reads every written row first, and every audit row needs its
# `nothing` (''), so it can run neither before the writes nor after a seq. Taking it before a question's row lock
# could deadlock with a resolver holding the row and waiting for the audit lock; rows are locked in id order so
# that two groups locking the same questions wait for each other instead of deadlocking.

CHAINED_INSERT: LiteralString = """\
INSERT INTO audit (seq, at, question_id, kind, channel, actor, detail_json, prev, hash) OVERRIDING SYSTEM VALUE
SELECT c.seq, c.at, c.question_id, c.kind, c.channel, c.actor, c.detail_json, c.prev, c.hash
FROM chaining r CROSS JOIN LATERAL handraise_audit_chained(r.ats, r.question_ids, r.kinds, r.channels, r.actors,
                                                           r.details) c
RETURNING question_id
"""
"""The end of every statement that appends audit rows: its `chaining` CTE gathers them in order, as arrays, once the
audit lock is held (none when nothing was written: the function is strict), and one call chains them all (schema
migration 8). The arrays' order is the rows' seq order."""

CREATE_QUESTIONS: LiteralString = (
    """\
WITH given AS (
    SELECT * FROM unnest(%b::text[], %b::timestamptz[], %b::text[], %b::text[], %b::text[], %b::text[],
                         %b::timestamptz[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[])
        WITH ORDINALITY AS g (id, created_at, agent_id, status, record_json, owner, at, detail,
                              channel, key, ref_json, shown, n)
), written AS (
    INSERT INTO questions (id, created_at, agent_id, status, record_json, owner)
    SELECT id, created_at, agent_id, status, record_json, owner FROM given ORDER BY id
    ON CONFLICT (id) DO NOTHING RETURNING id
), delivered AS (
    INSERT INTO deliveries (question_id, channel, key, ref_json, created_at)
    SELECT id, channel, key, ref_json, at FROM given JOIN written USING (id) WHERE channel IS NOT NULL ORDER BY id
    RETURNING question_id
), locked AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(%s, %s)::text AS nothing
    FROM (SELECT count(*) AS made FROM (SELECT id FROM written UNION ALL SELECT question_id FROM delivered) w) w
    WHERE made > 0
), events AS (
    SELECT g.n, 0 AS k, g.at, g.id, 'asked' AS kind, NULL::text AS channel, g.detail
    FROM given g JOIN written USING (id)
    UNION ALL
    SELECT g.n, 1, g.at, g.id, 'delivered', g.channel, g.shown
    FROM given g JOIN written USING (id) WHERE g.channel IS NOT NULL
), chaining AS (
    SELECT array_agg(e.at ORDER BY e.n, e.k) AS ats, array_agg(e.id ORDER BY e.n, e.k) AS question_ids,
           array_agg(e.kind ORDER BY e.n, e.k) AS kinds, array_agg(e.channel ORDER BY e.n, e.k) AS channels,
           array_agg(NULL::text) AS actors, array_agg(e.detail || l.nothing ORDER BY e.n, e.k) AS details
    FROM events e CROSS JOIN locked l
)
"""
    + CHAINED_INSERT
)
"""New questions and their `asked` events, and the deliveries given with them (a row's channel, key, reference and
`delivered` detail, or NULLs) with their `delivered` events, each question's two in that order; returns the ids
created (an id already stored is left alone, and so is the delivery given with it). The deliveries are counted
before the audit lock, so that they are written (and the key's unique index waited for) before it is taken."""

ADD_DELIVERIES: LiteralString = (
    """\
WITH given AS (
    SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::timestamptz[],
                         %b::text[])
        WITH ORDINALITY AS g (question_id, channel, key, ref_json, created_at, at, detail, n)
), written AS (
    INSERT INTO deliveries (question_id, channel, key, ref_json, created_at)
    SELECT question_id, channel, key, ref_json, created_at FROM given ORDER BY question_id
    ON CONFLICT (question_id, channel) DO UPDATE
    SET key = excluded.key, ref_json = excluded.ref_json, created_at = excluded.created_at
    RETURNING question_id, channel
), touched AS (
    SELECT q.id FROM questions q WHERE q.id IN (SELECT question_id FROM written) ORDER BY q.id FOR NO KEY UPDATE
), locked AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(%s, %s)::text AS nothing FROM (SELECT count(*) AS made FROM touched) t WHERE made > 0
), chaining AS (
    SELECT array_agg(g.at ORDER BY g.n) AS ats, array_agg(g.question_id ORDER BY g.n) AS question_ids,
           array_agg('delivered'::text) AS kinds, array_agg(g.channel ORDER BY g.n) AS channels,
           array_agg(NULL::text) AS actors, array_agg(g.detail || l.nothing ORDER BY g.n) AS details
    FROM given g JOIN written USING (question_id, channel) CROSS JOIN locked l
)
"""
    + CHAINED_INSERT
)
"""Deliveries (a question's delivery on a channel replaces the earlier one) and their `delivered` events. The
questions are locked with the writes, before the audit lock: the foreign keys' checks at the end of the statement
would otherwise wait for a replica's claim of a question (`FOR UPDATE`) while holding it."""

SWAP_RECORDS: LiteralString = (
    """\
WITH given AS (
    SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::bytea[], %b::timestamptz[], %b::text[], %b::text[],
                         %b::text[], %b::text[])
        WITH ORDINALITY AS g (id, status, record_json, digest, at, kind, channel, actor, detail, n)
), ordered AS MATERIALIZED (
    SELECT q.id FROM questions q JOIN given g USING (id) ORDER BY q.id FOR NO KEY UPDATE OF q
), written AS (
    UPDATE questions q SET status = g.status, record_json = g.record_json
    FROM given g JOIN ordered USING (id)
    WHERE q.id = g.id AND q.status = 'pending' AND sha256(convert_to(q.record_json, 'UTF8')) = g.digest
    RETURNING q.id
), locked AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(%s, %s)::text AS nothing FROM (SELECT count(*) AS made FROM written) w WHERE made > 0
), chaining AS (
    SELECT array_agg(g.at ORDER BY g.n) AS ats, array_agg(g.id ORDER BY g.n) AS question_ids,
           array_agg(g.kind ORDER BY g.n) AS kinds, array_agg(g.channel ORDER BY g.n) AS channels,
           array_agg(g.actor ORDER BY g.n) AS actors, array_agg(g.detail || l.nothing ORDER BY g.n) AS details
    FROM given g JOIN written USING (id) CROSS JOIN locked l
)
"""
    + CHAINED_INSERT
)
"""Compare-and-swap of question records (`PostgresStore._swap`): each is written, with its audit event, only if its
question is still pending and stored exactly as the copy it was made from (by digest); returns the ids written."""

FIND_REPLIES: LiteralString = """\
SELECT d.channel, d.key, q.record_json, d.question_id, d.ref_json, d.created_at
FROM deliveries d JOIN questions q ON q.id = d.question_id
WHERE (d.channel, d.key) IN (SELECT * FROM unnest(%b::text[], %b::text[]))
"""
"""The deliveries of the `(channel, key)` pairs given, each with its question's record, for the replies to them."""
