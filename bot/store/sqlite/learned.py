"""The rules "Always allow" learned, in the SQLite file: the statements the store's calls are made of."""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.store.records import LearnedRule
from bot.store.sqlite.times import time_text

_COLUMNS = "id, agent, project, tool, request, learned_at, question_id, learned_by"


def insert_learned(db: sqlite3.Connection, rule: LearnedRule) -> bool:
    """Store `rule` unless a rule with its id is stored (the same request learned again): True when it is new."""
    cursor = db.execute(
        f"INSERT INTO learned_rules ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (
            rule.id,
            rule.agent,
            rule.project,
            rule.tool,
            rule.request,
            time_text(rule.learned_at),
            rule.question_id,
            rule.by,
        ),
    )
    return cursor.rowcount == 1


def select_learned(db: sqlite3.Connection, rule_id: str | None = None) -> list[LearnedRule]:
    """The learned rules, oldest first; with `rule_id`, only that one (if stored)."""
    if rule_id is None:
        rows = db.execute(f"SELECT {_COLUMNS} FROM learned_rules ORDER BY learned_at, rowid").fetchall()
    else:
        rows = db.execute(f"SELECT {_COLUMNS} FROM learned_rules WHERE id = ?", (rule_id,)).fetchall()
    return [_learned(row) for row in rows]


def delete_learned(db: sqlite3.Connection, rule_id: str) -> bool:
    return db.execute("DELETE FROM learned_rules WHERE id = ?", (rule_id,)).rowcount == 1


def _learned(row: tuple[Any, ...]) -> LearnedRule:
    rule_id, agent, project, tool, request, learned_at, question_id, by = row
    return LearnedRule(
        id=rule_id,
        agent=agent,
        project=project,
        tool=tool,
        request=request,
        learned_at=learned_at,
        question_id=question_id,
        by=by,
    )
