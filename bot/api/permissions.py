"""`POST /v1/permissions`: a coding agent's permission prompt, decided by a rule at once or asked of a person.

The config's rules are read once, at start; the learned ones are read from the store on every request, so a rule
learned on another replica, or removed with `handraise rules remove`, counts from the next request on. A decision a
rule makes is written to the audit log (a `rule` line) before it is answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web
from pydantic import ValidationError

from bot.api.permission_body import PermissionBody
from bot.api.routes import LEDGER_KEY, REMOTE_KEY, STATUS_OF_CODE, error_response, read_body
from bot.permissions.audit import rule_detail
from bot.permissions.prompt import Permission, question
from bot.permissions.rules import Rule, Verdict, decide, learned_id
from bot.questions.validation import MAX_BODY_BYTES, RequestRefused, check_ask_payload, field_path, parse_ask_body
from bot.store.interface import AsyncStore
from bot.store.records import AgentRef
from core import AskUserQuestionItem, UserQuestionError

RULES_KEY = web.AppKey("rules", tuple[Rule, ...])


async def verdict_for(
    permission: Permission, agent: AgentRef | None, rules: Sequence[Rule], store: AsyncStore
) -> Verdict | None:
    """The rules' verdict: the config's `rules` and the rule learned for this very request, if the store has one."""
    learned = await store.learned_rule(learned_id(permission))
    return decide(permission, agent, [*rules, *([Rule.learned(learned)] if learned is not None else [])])


async def ask_permission(request: web.Request) -> web.Response:
    try:
        body = PermissionBody.model_validate(parse_ask_body(await read_body(request, MAX_BODY_BYTES)), strict=True)
    except RequestRefused as refused:
        return error_response(refused.status, refused.code, refused.message)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        return error_response(422, "BAD_REQUEST", f"{field_path(first['loc']) or 'body'}: {first['msg']}")
    permission, agent = body.permission.permission(), body.agent
    store = request.app[LEDGER_KEY].store
    verdict = await verdict_for(permission, agent, request.app[RULES_KEY], store)
    if verdict is not None:
        await store.audit_rule(actor=agent.id if agent else None, detail=rule_detail(verdict, permission, agent))
        await store.durable()
        return web.json_response(
            {"behavior": verdict.behavior, "message": verdict.message, "rule": verdict.rule.to_wire()}
        )
    asked = question(permission)
    try:
        check_ask_payload({"questions": [asked]})
        items = [AskUserQuestionItem.model_validate(asked)]
    except RequestRefused as refused:
        return error_response(refused.status, refused.code, refused.message.replace("questions[0]", "the question"))
    try:
        record = await request.app[REMOTE_KEY].ask(items, agent, permission=permission.to_wire())
    except UserQuestionError as refused:
        return error_response(STATUS_OF_CODE.get(refused.code, 422), refused.code, refused.message)
    await store.durable()
    return web.json_response(
        {"id": record.id, "status": "pending"}, status=202, headers={"Location": f"/v1/questions/{record.id}"}
    )


def add_permission_routes(app: web.Application, rules: Sequence[Rule]) -> None:
    """`POST /v1/permissions`, deciding with the config's `rules` (after `add_api_routes`, whose keys it reads)."""
    app[RULES_KEY] = tuple(rules)
    app.router.add_post("/v1/permissions", ask_permission)
