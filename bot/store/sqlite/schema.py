"""The store's schema, its migrations, and opening a SQLite file as a handraise store.

`MIGRATIONS[n]` takes `PRAGMA user_version` from n to n + 1; only ever append. A file written by a newer
handraise, or another application's database, is refused with a message instead of being altered.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from bot.store.errors import StoreError

APPLICATION_ID = 0x68726169  # "hrai": marks the file as handraise's in its SQLite header

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE questions (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        agent_id TEXT,
        status TEXT NOT NULL,
        record_json TEXT NOT NULL
    );
    CREATE INDEX questions_by_status ON questions (status, created_at);
    CREATE INDEX questions_by_agent ON questions (agent_id, created_at);
    CREATE TABLE deliveries (
        question_id TEXT NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
        channel TEXT NOT NULL,
        key TEXT NOT NULL,
        ref_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (question_id, channel)
    );
    CREATE UNIQUE INDEX deliveries_by_key ON deliveries (channel, key);
    CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        question_id TEXT NOT NULL REFERENCES questions (id),
        kind TEXT NOT NULL,
        channel TEXT,
        actor TEXT,
        detail_json TEXT NOT NULL
    );
    CREATE INDEX audit_by_question ON audit (question_id, seq);
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    """,
    # Events a channel has acted on, by the sender's id for them (Slack's event_id), so that a re-delivery (Slack
    # retries a slow acknowledgement) is recognised after a restart too. Pruned by `seen_at`.
    """
    CREATE TABLE seen_events (
        channel TEXT NOT NULL,
        key TEXT NOT NULL,
        seen_at TEXT NOT NULL,
        PRIMARY KEY (channel, key)
    ) WITHOUT ROWID;
    CREATE INDEX seen_events_by_time ON seen_events (seen_at);
    """,
    # Fewer pages per commit: the audit log's `seq` without AUTOINCREMENT (the table is append-only, so the largest
    # rowid + 1 never reuses a number, and the sqlite_sequence row no longer has to be written with every event), and
    # the by-agent index only for questions that name an agent (`agent_id = ?` still uses it). Rows keep their `seq`.
    """
    DROP TRIGGER audit_no_update;
    DROP TRIGGER audit_no_delete;
    CREATE TABLE audit_by_seq (
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        question_id TEXT NOT NULL REFERENCES questions (id),
        kind TEXT NOT NULL,
        channel TEXT,
        actor TEXT,
        detail_json TEXT NOT NULL
    );
    INSERT INTO audit_by_seq SELECT seq, at, question_id, kind, channel, actor, detail_json FROM audit ORDER BY seq;
    DROP TABLE audit;
    ALTER TABLE audit_by_seq RENAME TO audit;
    CREATE INDEX audit_by_question ON audit (question_id, seq);
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    DROP INDEX questions_by_agent;
    CREATE INDEX questions_by_agent ON questions (agent_id, created_at) WHERE agent_id IS NOT NULL;
    """,
    # Timers that must act once per question (escalation): a row per (question, timer) that fired, so a restart, or
    # another replica taking the question over, does not fire it again.
    """
    CREATE TABLE fired (
        question_id TEXT NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (question_id, name)
    ) WITHOUT ROWID;
    """,
    # Permission rules: the rules "Always allow" learned, and the audit log's `rule` lines, which record a decision
    # a rule made without a person and so have no question (`question_id` may be NULL; rows keep their `seq`). A
    # rule line's `actor` is the asking agent's id, indexed for `handraise history --agent`.
    """
    CREATE TABLE learned_rules (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        project TEXT NOT NULL,
        tool TEXT NOT NULL,
        request TEXT NOT NULL,
        learned_at TEXT NOT NULL,
        question_id TEXT,
        learned_by TEXT
    );
    DROP TRIGGER audit_no_update;
    DROP TRIGGER audit_no_delete;
    CREATE TABLE audit_with_rules (
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        question_id TEXT REFERENCES questions (id),
        kind TEXT NOT NULL,
        channel TEXT,
        actor TEXT,
        detail_json TEXT NOT NULL
    );
    INSERT INTO audit_with_rules SELECT seq, at, question_id, kind, channel, actor, detail_json FROM audit ORDER BY seq;
    DROP TABLE audit;
    ALTER TABLE audit_with_rules RENAME TO audit;
    CREATE INDEX audit_by_question ON audit (question_id, seq);
    CREATE INDEX audit_rules_by_agent ON audit (actor, seq) WHERE question_id IS NULL;
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    """,
    # The audit log as a hash chain (`bot.store.chain`): each row written from now on keeps the previous row's hash
    # and its own. Rows written before keep NULLs; the chain starts at the first row written after this migration.
    """
    ALTER TABLE audit ADD COLUMN prev TEXT;
    ALTER TABLE audit ADD COLUMN hash TEXT;
    """,
    # Webhook deliveries (`bot.store.webhook_queue`): queued with the event they announce, in its transaction; `state`
    # is pending until a 2xx (delivered) or the retries run out (failed). `due_at` is the next attempt's time, or the
    # end of the lease of an attempt under way. `record_json` is the question as it stood at the event.
    """
    CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook TEXT NOT NULL,
        question_id TEXT NOT NULL,
        event TEXT NOT NULL,
        record_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        due_at TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL DEFAULT 'pending',
        last_error TEXT
    ) WITHOUT ROWID;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE state = 'pending';
    """,
    # Values made once and kept (`bot.store.sqlite.kept`): the web session secret and the Web Push key pair, so that
    # a restart keeps them; and the browsers that asked for Web Push notifications, one row per device (its endpoint).
    """
    CREATE TABLE kept_values (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        created_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE push_subscriptions (
        endpoint TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        p256dh TEXT NOT NULL,
        auth TEXT NOT NULL,
        created_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX push_subscriptions_by_person ON push_subscriptions (person);
    """,
)
"""Schema migrations; `MIGRATIONS[n]` takes `PRAGMA user_version` from n to n + 1. Only ever append."""

SCHEMA_VERSION = len(MIGRATIONS)


def statements(script: str) -> Iterator[str]:
    """Split a script into statements, trigger bodies included; `executescript` would commit behind our back."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:80]!r}")


def configure(db: sqlite3.Connection, name: str) -> None:
    try:
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        application_id = int(db.execute("PRAGMA application_id").fetchone()[0])
    except sqlite3.DatabaseError as error:
        raise StoreError(
            f"{name} is not a handraise store (SQLite says: {error}); move it aside or pick another path"
        ) from None
    if application_id not in (0, APPLICATION_ID):
        raise StoreError(f"{name} is another application's SQLite database, not a handraise store; pick another path")


def migrate(db: sqlite3.Connection, name: str) -> None:
    """Apply the missing migrations, each in its own transaction with its version bump.

    The version is read inside the write transaction, so two processes opening a fresh file at once migrate it once.
    """
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{name} was written by a newer handraise (schema {version}, this one knows {SCHEMA_VERSION}); "
                    "upgrade handraise"
                )
            if version == SCHEMA_VERSION:
                db.commit()
                return
            has_tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
            if version == 0 and has_tables:
                raise StoreError(f"{name} is a SQLite database that is not a handraise store; pick another path")
            for statement in statements(MIGRATIONS[version]):
                db.execute(statement)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.commit()
        except BaseException as error:
            if db.in_transaction:
                db.rollback()
            if isinstance(error, sqlite3.Error):
                raise StoreError(f"cannot migrate the handraise store at {name}: {error}") from error
            raise
