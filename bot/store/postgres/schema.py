"""The PostgreSQL store's schema, its migrations, and the messages for a database handraise cannot use.

`MIGRATIONS[n]` takes the version in `handraise_schema_version` from n to n + 1; only ever append. Several replicas
starting at once migrate once: each migrates inside one transaction holding a transaction-level advisory lock, and
reads the version only after taking it. A database written by a newer handraise, or one with tables but no handraise
marker (another application's), is refused instead of altered.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from bot.store.errors import StoreError
from bot.store.sqlite.schema import APPLICATION_ID

MIGRATIONS: tuple[str, ...] = (
    # Records are kept as JSON text, as in the SQLite store, not jsonb: nothing queries inside them, text keeps the
    # exact bytes written (the store compares them to skip re-parsing a record), and text accepts the \u0000 escape
    # that jsonb refuses. `n` orders rows inserted in the same microsecond, as SQLite's rowid does.
    """
    CREATE TABLE questions (
        id text PRIMARY KEY,
        n bigint GENERATED ALWAYS AS IDENTITY,
        created_at timestamptz NOT NULL,
        agent_id text,
        status text NOT NULL,
        record_json text NOT NULL
    );
    CREATE INDEX questions_by_time ON questions (created_at, n);
    CREATE INDEX questions_by_status ON questions (status, created_at);
    CREATE INDEX questions_by_agent ON questions (agent_id, created_at) WHERE agent_id IS NOT NULL;
    CREATE TABLE deliveries (
        question_id text NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
        channel text NOT NULL,
        key text NOT NULL,
        ref_json text NOT NULL,
        created_at timestamptz NOT NULL,
        n bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (question_id, channel),
        CONSTRAINT deliveries_by_key UNIQUE (channel, key)
    );
    CREATE TABLE audit (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at timestamptz NOT NULL,
        question_id text NOT NULL REFERENCES questions (id),
        kind text NOT NULL,
        channel text,
        actor text,
        detail_json text NOT NULL
    );
    CREATE INDEX audit_by_question ON audit (question_id, seq);
    CREATE FUNCTION handraise_audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the audit log is append-only';
    END
    $$;
    CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
        FOR EACH ROW EXECUTE FUNCTION handraise_audit_is_append_only();
    CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
        FOR EACH STATEMENT EXECUTE FUNCTION handraise_audit_is_append_only();
    CREATE TABLE seen_events (
        channel text NOT NULL,
        key text NOT NULL,
        seen_at timestamptz NOT NULL,
        PRIMARY KEY (channel, key)
    );
    CREATE INDEX seen_events_by_time ON seen_events (seen_at);
    """,
    # Replicas: each `serve` process keeps its row's lease alive; `questions.owner` names the replica running the
    # question's waterfall, and a live replica claims the pending questions of a dead one. `fired` records timers
    # that act once per question (escalation), whichever replica runs them.
    """
    CREATE TABLE replicas (
        id text PRIMARY KEY,
        started_at timestamptz NOT NULL,
        alive_until timestamptz NOT NULL
    );
    ALTER TABLE questions ADD COLUMN owner text;
    CREATE INDEX questions_pending_by_owner ON questions (owner, created_at) WHERE status = 'pending';
    CREATE TABLE fired (
        question_id text NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
        name text NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (question_id, name)
    );
    """,
    # The change feed (bot/replicas/postgres_feed.py). `changed_at` is the database's clock when anything about a
    # question last changed (its record, or a delivery of it), for replicas catching up after a lost NOTIFY; NOTIFY
    # itself wakes them at commit. The payload is the id, or '' for an id too long for a payload (then they catch up).
    """
    ALTER TABLE questions ADD COLUMN changed_at timestamptz NOT NULL DEFAULT clock_timestamp();
    CREATE INDEX questions_by_change ON questions (changed_at);
    CREATE FUNCTION handraise_question_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.changed_at := clock_timestamp();
        PERFORM pg_notify('handraise_changes', CASE WHEN octet_length(NEW.id) < 4000 THEN NEW.id ELSE '' END);
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER questions_changed BEFORE INSERT OR UPDATE ON questions
        FOR EACH ROW EXECUTE FUNCTION handraise_question_changed();
    CREATE FUNCTION handraise_delivery_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE questions SET changed_at = clock_timestamp() WHERE id = NEW.question_id;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER deliveries_changed AFTER INSERT OR UPDATE ON deliveries
        FOR EACH ROW EXECUTE FUNCTION handraise_delivery_changed();
    """,
    # Less work per write. A delivery is stamped on its own row instead of rewriting its question's: that update
    # wrote a second copy of the whole question (its record) and an entry in each of its indexes, and ran the
    # question's trigger, for every delivery — about a fifth of the server's work for one (bench/RESULTS.md). A
    # question's change stamp is now the latest of its own and its deliveries' (`PostgresStore.changed_since`,
    # `changed_questions`); deliveries made before this migration read as '-infinity', since their question's stamp
    # already counts them. The NOTIFY is the same: one per changed delivery, the question's id, sent at commit.
    # Records over about 2 KB (a long detail: a plan to review) are compressed as they are written, and every change
    # writes the whole record again: lz4 costs the server about half the CPU of the default pglz for a 100 KB
    # record and reads back faster. Records written before keep theirs until rewritten; a server built without lz4
    # (or older than 14) keeps pglz.
    """
    ALTER TABLE deliveries ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
    ALTER TABLE deliveries ALTER COLUMN changed_at SET DEFAULT clock_timestamp();
    CREATE INDEX deliveries_by_change ON deliveries (changed_at);
    DROP TRIGGER deliveries_changed ON deliveries;
    DROP FUNCTION handraise_delivery_changed();
    CREATE FUNCTION handraise_delivery_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.changed_at := clock_timestamp();
        PERFORM pg_notify(
            'handraise_changes', CASE WHEN octet_length(NEW.question_id) < 4000 THEN NEW.question_id ELSE '' END
        );
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER deliveries_changed BEFORE INSERT OR UPDATE ON deliveries
        FOR EACH ROW EXECUTE FUNCTION handraise_delivery_changed();
    DO $$
    BEGIN
        IF current_setting('server_version_num')::integer >= 140000 THEN  -- column compression came in 14
            EXECUTE 'ALTER TABLE questions ALTER COLUMN record_json SET COMPRESSION lz4';
        END IF;
    EXCEPTION WHEN feature_not_supported THEN
        NULL;
    END
    $$;
    """,
    # Permission rules: the rules "Always allow" learned, and the audit log's `rule` lines, which record a decision
    # a rule made without a person and so have no question. A rule line's `actor` is the asking agent's id, indexed
    # for `handraise history --agent`.
    """
    CREATE TABLE learned_rules (
        id text PRIMARY KEY,
        agent text NOT NULL,
        project text NOT NULL,
        tool text NOT NULL,
        request text NOT NULL,
        learned_at timestamptz NOT NULL,
        question_id text,
        learned_by text
    );
    ALTER TABLE audit ALTER COLUMN question_id DROP NOT NULL;
    CREATE INDEX audit_rules_by_agent ON audit (actor, seq) WHERE question_id IS NULL;
    """,
    # The audit log as a hash chain (`bot.store.chain`, which says the encoding): a trigger gives each new row the
    # previous row's hash and its own. Every insert holds the audit lock to its commit (`PostgresStore._append`), so
    # the previous row is the last one committed, or the one before it in the same statement; the trigger's query
    # sees both (it runs with a fresh snapshot, after the lock). Rows written before keep NULLs.
    """
    ALTER TABLE audit ADD COLUMN prev text, ADD COLUMN hash text;
    CREATE FUNCTION handraise_chain_field(value text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN value IS NULL THEN '-,' ELSE octet_length(value)::text || ':' || value || ',' END
    $$;
    CREATE FUNCTION handraise_audit_chained() RETURNS trigger LANGUAGE plpgsql AS $$
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
        FOR EACH ROW EXECUTE FUNCTION handraise_audit_chained();
    """,
    # Webhook deliveries (`bot.store.webhook_queue`), as in the SQLite store: queued in the statement of the event
    # they announce, claimed by one replica each (`bot.store.postgres.webhooks`).
    """
    CREATE TABLE webhook_deliveries (
        id text PRIMARY KEY,
        webhook text NOT NULL,
        question_id text NOT NULL,
        event text NOT NULL,
        record_json text NOT NULL,
        created_at timestamptz NOT NULL,
        due_at timestamptz NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        state text NOT NULL DEFAULT 'pending',
        last_error text
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE state = 'pending';
    """,
    # The chain without a per-row trigger: that trigger made a PL/pgSQL call, a query for the last row and a hash per
    # audit row (bench/RESULTS.md: 7-17 µs of the database's CPU per grouped write, against 2-8 µs now). Every audit
    # insert now chains its rows itself with one call per statement, `handraise_audit_chained`, made after the audit
    # lock (its query for the last row runs with a fresh snapshot, so it sees every append committed before the lock
    # was granted): it takes the statement's rows in order and returns them with their seq (from the column's own
    # sequence, `audit_seq_seq` as schema 0 named it, so that seqs still grow under the lock), `prev` and `hash`, the
    # encoding unchanged (`bot.store.chain`). Rows already written keep theirs; the chain goes on from the last one.
    """
    DROP TRIGGER audit_chained ON audit;
    DROP FUNCTION handraise_audit_chained();
    CREATE FUNCTION handraise_audit_chained(
        ats timestamptz[], question_ids text[], kinds text[], channels text[], actors text[], details text[]
    ) RETURNS SETOF audit LANGUAGE plpgsql STRICT AS $$
    DECLARE
        made audit;
        previous text;
    BEGIN
        SELECT a.hash INTO previous FROM audit a ORDER BY a.seq DESC LIMIT 1;
        previous := coalesce(previous, repeat('0', 64));
        FOR i IN 1 .. coalesce(cardinality(ats), 0) LOOP
            made.seq := nextval('audit_seq_seq');
            made.at := ats[i];
            made.question_id := question_ids[i];
            made.kind := kinds[i];
            made.channel := channels[i];
            made.actor := actors[i];
            made.detail_json := details[i];
            made.prev := previous;
            made.hash := encode(sha256(convert_to(
                handraise_chain_field(previous) || handraise_chain_field(made.seq::text)
                || handraise_chain_field(to_char(made.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'))
                || handraise_chain_field(made.question_id) || handraise_chain_field(made.kind)
                || handraise_chain_field(made.channel) || handraise_chain_field(made.actor)
                || handraise_chain_field(made.detail_json),
                'UTF8')), 'hex');
            previous := made.hash;
            RETURN NEXT made;
        END LOOP;
    END
    $$;
    """,
    # Values made once and kept (`bot.store.postgres.kept`): the web session secret and the Web Push key pair, shared
    # by every replica; and the browsers that asked for Web Push notifications, one row per device (its endpoint).
    """
    CREATE TABLE kept_values (
        name text PRIMARY KEY,
        value text NOT NULL,
        created_at timestamptz NOT NULL
    );
    CREATE TABLE push_subscriptions (
        endpoint text PRIMARY KEY,
        person text NOT NULL,
        p256dh text NOT NULL,
        auth text NOT NULL,
        created_at timestamptz NOT NULL
    );
    CREATE INDEX push_subscriptions_by_person ON push_subscriptions (person);
    """,
)
"""Schema migrations; `MIGRATIONS[n]` takes the stored version from n to n + 1. Only ever append."""

SCHEMA_VERSION = len(MIGRATIONS)

MARKER = "handraise_schema_version"
"""The table that marks a database as handraise's and holds its schema version (one row)."""

MIGRATION_LOCK = (APPLICATION_ID, 1)
"""The advisory lock (two int4 keys) that serialises migrations between replicas."""
AUDIT_LOCK = (APPLICATION_ID, 2)
"""The advisory lock held from an audit insert to its commit: see `PostgresStore._append`."""
CLAIM_LOCK = (APPLICATION_ID, 3)
"""The advisory lock claims of orphaned questions share, and a replica re-taking a lease that ran out holds alone
(`bot.replicas.postgres`)."""
LEADER_LOCKS = APPLICATION_ID + 1
"""The first key of the session advisory locks that elect one replica for a singleton (`bot.replicas.postgres`)."""


def keep(value: str) -> str:
    """A key or name as a text column holds it: PostgreSQL text refuses NUL, which SQLite keeps. The escape is
    injective (backslash doubled, NUL as backslash-zero), so lookups still match exactly; plain values are unchanged."""
    if "\\" not in value and "\x00" not in value:
        return value
    return value.replace("\\", "\\\\").replace("\x00", "\\0")


def restore(value: str) -> str:
    if "\\" not in value:
        return value
    return re.sub(r"\\(.)", lambda match: "\x00" if match[1] == "0" else match[1], value, flags=re.DOTALL)


def keep_optional(value: str | None) -> str | None:
    return None if value is None else keep(value)


def restore_optional(value: str | None) -> str | None:
    return None if value is None else restore(value)


async def current_version(db: psycopg.AsyncConnection) -> int | None:
    """The stored schema version, or None when the database has no handraise marker."""
    cursor = await db.execute("SELECT to_regclass(%s) IS NOT NULL", (MARKER,))
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return None
    cursor = await db.execute(sql.SQL("SELECT version FROM {}").format(sql.Identifier(MARKER)))
    row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


async def migrate(db: psycopg.AsyncConnection, target: str) -> int:
    """Bring the database to SCHEMA_VERSION in one transaction; returns the version it found.

    Raises StoreError for a database written by a newer handraise or one that holds another application's tables.
    """
    async with db.transaction():
        await db.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
        found = await current_version(db)
        if found is None:
            cursor = await db.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
                "WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] > 0:
                raise StoreError(
                    f"PostgreSQL at {target} holds tables that are not a handraise store; "
                    "give handraise a database of its own (createdb handraise)"
                )
            await db.execute(sql.SQL("CREATE TABLE {} (version integer NOT NULL)").format(sql.Identifier(MARKER)))
            await db.execute(sql.SQL("INSERT INTO {} VALUES (0)").format(sql.Identifier(MARKER)))
        version = found or 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"PostgreSQL at {target} was written by a newer handraise (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade handraise"
            )
        for script in MIGRATIONS[version:]:
            # No parameters: psycopg sends the script as one simple query, several statements at once.
            await db.execute(script.encode())
        if version < SCHEMA_VERSION:
            await db.execute(sql.SQL("UPDATE {} SET version = %s").format(sql.Identifier(MARKER)), (SCHEMA_VERSION,))
    return version
