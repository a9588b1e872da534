"""The rules "Always allow" learned, on PostgreSQL: the statements the store's calls are made of.

Texts are kept as the other tables keep them (`keep`: PostgreSQL text refuses NUL), so a rule reads back exactly.
"""

from __future__ import annotations

from typing import Any, LiteralString

from psycopg import AsyncConnection, AsyncCursor

from bot.store.postgres.schema import keep, keep_optional, restore, restore_optional
from bot.store.records import LearnedRule

_SELECT: LiteralString = (
    "SELECT id, agent, project, tool, request, learned_at, question_id, learned_by FROM learned_rules"
)


async def insert_learned(db: AsyncConnection[Any] | AsyncCursor[Any], rule: LearnedRule) -> bool:
    """Store `rule` unless a rule with its id is stored (the same request learned again): True when it is new."""
    cursor = await db.execute(
        "INSERT INTO learned_rules (id, agent, project, tool, request, learned_at, question_id, learned_by) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
        (
            keep(rule.id),
            keep(rule.agent),
            keep(rule.project),
            keep(rule.tool),
            keep(rule.request),
            rule.learned_at,
            keep_optional(rule.question_id),
            keep_optional(rule.by),
        ),
    )
    return cursor.rowcount == 1


async def select_learned(db: AsyncConnection[Any], rule_id: str | None = None) -> list[LearnedRule]:
    """The learned rules, oldest first; with `rule_id`, only that one (if stored)."""
    if rule_id is None:
        cursor = await db.execute(_SELECT + " ORDER BY learned_at, id")
    else:
        cursor = await db.execute(_SELECT + " WHERE id = %s", (keep(rule_id),))
    return [_learned(row) for row in await cursor.fetchall()]


async def delete_learned(db: AsyncConnection[Any], rule_id: str) -> bool:
    cursor = await db.execute("DELETE FROM learned_rules WHERE id = %s", (keep(rule_id),))
    return cursor.rowcount == 1


def _learned(row: tuple[Any, ...]) -> LearnedRule:
    rule_id, agent, project, tool, request, learned_at, question_id, by = row
    return LearnedRule(
        id=restore(rule_id),
        agent=restore(agent),
        project=restore(project),
        tool=restore(tool),
        request=restore(request),
        learned_at=learned_at,
        question_id=restore_optional(question_id),
        by=restore_optional(by),
    )
