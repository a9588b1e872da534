"""Asks per second through `ctx.user_questions.ask()` beside a direct call of the same answerer.

Run: `uv run python bench/dispatch.py` (one process, one core). Prints one line per case; record the figures
in bench/RESULTS.md with the machine named.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from core import (
    Agent,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionService,
)

ANSWER = AskUserQuestionAnswer.model_validate({"answers": [{"id": "q1", "selected": ["Yes"]}]})
REQUEST = AskUserQuestionRequest(
    questions=[AskUserQuestionItem.model_validate({"id": "q1", "question": "Go?", "options": [{"label": "Yes"}]})]
)


async def claim(request: AskUserQuestionRequest, next_: Any) -> AskUserQuestionAnswer:
    return ANSWER


async def delegate(request: AskUserQuestionRequest, next_: Any) -> Any:
    return await next_()


def context_with(delegates: int) -> Context:
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    for _ in range(delegates):
        ctx.on("user-questions/request", delegate)
    ctx.on("user-questions/request", claim)
    return ctx


async def rate(call: Callable[[], Awaitable[Any]], seconds: float = 2.0) -> float:
    """Calls per second, measured in batches until `seconds` have passed."""
    for _ in range(1000):
        await call()
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(1000):
            await call()
        count += 1000
    return count / elapsed


def plan_review_request(ctx: Context) -> AskUserQuestionRequest:
    """A typical agent request: a live root agent and a plan-review question, so every check does work."""
    agent = Agent("coder")
    registry = ctx.agents
    assert registry is not None
    registry.enter(agent)
    item = AskUserQuestionItem.model_validate(
        {
            "id": "plan",
            "question": "Approve the plan?",
            "detail": "1. migrate\n2. deploy",
            "options": [{"label": "Approve"}, {"label": "Revise"}],
            "intent": {"kind": "plan-review", "approve": "Approve"},
        }
    )
    return AskUserQuestionRequest(questions=[item], agent=agent)


async def check_rate(service: UserQuestionService, request: AskUserQuestionRequest) -> float:
    async def check() -> None:
        service.check(request)

    return await rate(check)


async def main() -> None:
    ask_one = context_with(0).user_questions
    ask_eleven = context_with(10).user_questions
    assert ask_one is not None and ask_eleven is not None
    direct = await rate(lambda: claim(REQUEST, None))
    one = await rate(lambda: ask_one.ask(REQUEST))
    eleven = await rate(lambda: ask_eleven.ask(REQUEST))
    checks_simple = await check_rate(ask_one, REQUEST)
    typical_ctx = context_with(0)
    typical = plan_review_request(typical_ctx)
    assert typical_ctx.user_questions is not None
    checks_typical = await check_rate(typical_ctx.user_questions, typical)
    per_ask_us = 1e6 / one - 1e6 / direct
    per_hop_us = (1e6 / eleven - 1e6 / one) / 10
    print(f"direct answerer call        {direct:12,.0f} calls/s")
    print(f"ask(), 1 claiming answerer  {one:12,.0f} asks/s   (seam overhead {per_ask_us:.2f} us/ask)")
    print(f"ask(), 10 delegating + 1    {eleven:12,.0f} asks/s   ({per_hop_us:.2f} us per delegating hop)")
    print(f"checks alone, agentless     {checks_simple:12,.0f} /s       ({1e6 / checks_simple:.2f} us)")
    print(f"checks alone, agent + plan  {checks_typical:12,.0f} /s       ({1e6 / checks_typical:.2f} us)")


if __name__ == "__main__":
    anyio.run(main)
