"""`ask()` refuses bad requests in the design's order, before any answerer is reached."""

from __future__ import annotations

from typing import Any

import pytest

from core import (
    AbortController,
    Agent,
    AskUserQuestionRequest,
    Context,
    ErrorCode,
    UserQuestionError,
    UserQuestionService,
)

from .helpers import make_context, question, registry, request, service

pytestmark = pytest.mark.anyio

PLAN_OPTIONS = [{"label": "Approve"}, {"label": "Revise"}]


class Recorder:
    """An answerer that records every request it sees and claims it."""

    def __init__(self) -> None:
        self.seen: list[AskUserQuestionRequest] = []

    async def __call__(self, req: AskUserQuestionRequest, next_: Any) -> dict[str, Any]:
        self.seen.append(req)
        return {"answers": [{"id": item.id, "selected": []} for item in req.questions]}


async def refused(ctx: Context, req: AskUserQuestionRequest) -> UserQuestionError:
    with pytest.raises(UserQuestionError) as caught:
        await service(ctx).ask(req)
    return caught.value


def aborted_signal() -> Any:
    controller = AbortController()
    controller.abort("stop")
    return controller.signal


async def test_aborted_signal_is_refused_before_an_answerer_is_reached() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    error = await refused(ctx, request(signal=aborted_signal()))
    assert (error.code, error.message) == ("ASK_ABORTED", "ask_user_question was aborted before the user answered")
    assert recorder.seen == []


async def test_empty_questions_are_refused() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    error = await refused(ctx, AskUserQuestionRequest(questions=[]))
    assert (error.code, error.message) == ("EMPTY_QUESTIONS", "ask_user_question requires at least one question")
    assert recorder.seen == []


async def test_aborted_signal_is_checked_before_empty_questions() -> None:
    error = await refused(make_context(), AskUserQuestionRequest(questions=[], signal=aborted_signal()))
    assert error.code == ErrorCode.ASK_ABORTED


async def test_agent_that_never_entered_is_not_live() -> None:
    error = await refused(make_context(), request(agent=Agent("a1")))
    assert error.code == "CALLER_NOT_LIVE"
    assert error.message == "human interaction requires the exact live calling agent when an agent is supplied"


async def test_agent_without_a_registry_is_not_live() -> None:
    ctx = Context()
    ctx.plugin(UserQuestionService)
    error = await refused(ctx, request(agent=Agent("a1")))
    assert error.code == "CALLER_NOT_LIVE"


async def test_stale_object_reusing_a_live_id_is_not_that_agent() -> None:
    ctx = make_context()
    registry(ctx).enter(Agent("a1"))
    error = await refused(ctx, request(agent=Agent("a1")))
    assert error.code == "CALLER_NOT_LIVE"


async def test_agent_after_leave_is_not_live() -> None:
    ctx = make_context()
    agent = Agent("a1")
    leave = registry(ctx).enter(agent)
    leave()
    assert (await refused(ctx, request(agent=agent))).code == "CALLER_NOT_LIVE"


async def test_owned_child_is_refused_even_at_depth_zero() -> None:
    ctx = make_context()
    parent, child = Agent("parent"), Agent("child")
    registry(ctx).enter(parent)
    registry(ctx).enter(child, owner=parent)
    error = await refused(ctx, request(agent=child))
    assert error.code == "DELEGATED_CALLER"
    assert error.message == (
        "human interaction is unavailable while the calling agent is owned by another live agent; "
        "include the unresolved question or decision in the child agent's final result"
    )


async def test_orphan_whose_owner_left_may_ask() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    parent, child = Agent("parent"), Agent("child")
    leave_parent = registry(ctx).enter(parent)
    registry(ctx).enter(child, owner=parent)
    leave_parent()
    await service(ctx).ask(request(agent=child))
    assert len(recorder.seen) == 1


async def test_session_resumed_as_a_new_root_may_ask_despite_delegation_history() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    parent = Agent("parent")
    leave_parent = registry(ctx).enter(parent)
    first_life = Agent("worker", labels={"delegation_depth": "3"})
    leave_first = registry(ctx).enter(first_life, owner=parent)
    assert (await refused(ctx, request(agent=first_life))).code == "DELEGATED_CALLER"
    leave_first()
    leave_parent()
    resumed = Agent("worker", labels={"delegation_depth": "3"})
    registry(ctx).enter(resumed)
    await service(ctx).ask(request(agent=resumed))
    assert recorder.seen[0].agent is resumed


async def test_non_live_agent_is_refused_before_a_bad_intent() -> None:
    bad = question(intent={"kind": "plan-review", "approve": "Nope"}, options=PLAN_OPTIONS, detail="plan")
    error = await refused(make_context(), request(bad, agent=Agent("ghost")))
    assert error.code == "CALLER_NOT_LIVE"


async def test_delegated_caller_is_refused_before_a_bad_intent() -> None:
    ctx = make_context()
    parent, child = Agent("p"), Agent("c")
    registry(ctx).enter(parent)
    registry(ctx).enter(child, owner=parent)
    bad = question(intent={"kind": "plan-review", "approve": "Nope"}, options=PLAN_OPTIONS, detail="plan")
    assert (await refused(ctx, request(bad, agent=child))).code == "DELEGATED_CALLER"


async def test_intent_whose_approve_label_is_not_an_option_is_refused() -> None:
    bad = question("plan", intent={"kind": "plan-review", "approve": "Ship it"}, options=PLAN_OPTIONS, detail="x")
    error = await refused(make_context(), request(bad))
    assert error.code == "BAD_INTENT"
    assert (
        error.message
        == 'question plan declares intent plan-review whose approve label "Ship it" names none of its options'
    )


async def test_intent_without_options_is_refused() -> None:
    bad = question("plan", intent={"kind": "plan-review", "approve": "Approve"}, detail="x")
    assert (await refused(make_context(), request(bad))).code == "BAD_INTENT"


async def test_intent_without_detail_is_refused() -> None:
    bad = question("plan", intent={"kind": "plan-review", "approve": "Approve"}, options=PLAN_OPTIONS)
    error = await refused(make_context(), request(bad))
    assert (error.code, error.message) == (
        "BAD_INTENT",
        "question plan declares intent plan-review without the detail it reviews",
    )


async def test_any_question_with_a_bad_intent_refuses_the_whole_request() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    good = question("a")
    bad = question("b", intent={"kind": "plan-review", "approve": "Approve"}, options=PLAN_OPTIONS)
    assert (await refused(ctx, request(good, bad))).message.startswith("question b declares")
    assert recorder.seen == []


async def test_intent_whose_reject_label_is_not_an_option_is_refused() -> None:
    intent = {"kind": "plan-review", "approve": "Approve", "reject": "Deny…"}
    bad = question("plan", intent=intent, options=PLAN_OPTIONS, detail="x")
    error = await refused(make_context(), request(bad))
    assert (error.code, error.message) == (
        "BAD_INTENT",
        'question plan declares intent plan-review whose reject label "Deny…" names none of its options',
    )


async def test_intent_whose_reject_label_is_its_approve_label_is_refused() -> None:
    intent = {"kind": "plan-review", "approve": "Approve", "reject": "Approve"}
    error = await refused(make_context(), request(question("plan", intent=intent, options=PLAN_OPTIONS, detail="x")))
    assert error.code == "BAD_INTENT"
    assert 'reject label "Approve" is also its approve label' in error.message


async def test_plan_review_with_a_reject_label_reaches_the_answerer_with_it() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    reject = PLAN_OPTIONS[-1]["label"]
    intent = {"kind": "plan-review", "approve": "Approve", "reject": reject}
    await service(ctx).ask(request(question("plan", intent=intent, options=PLAN_OPTIONS, detail="1.")))
    asked = recorder.seen[0].questions[0]
    assert asked.reject_label == reject
    assert asked.to_wire()["intent"] == {"kind": "plan-review", "approve": "Approve", "reject": reject}


async def test_good_plan_review_reaches_the_answerer() -> None:
    ctx = make_context()
    recorder = Recorder()
    ctx.on("user-questions/request", recorder)
    plan = question("plan", intent={"kind": "plan-review", "approve": "Approve"}, options=PLAN_OPTIONS, detail="1.")
    await service(ctx).ask(request(plan))
    assert recorder.seen[0].questions[0].intent is not None


async def test_no_answerer_fails_closed() -> None:
    error = await refused(make_context(), request())
    assert (error.code, error.message) == ("NO_PROVIDER", "no user-questions answerer accepted the request")


async def test_every_answerer_delegating_fails_closed() -> None:
    ctx = make_context()

    async def delegate(req: AskUserQuestionRequest, next_: Any) -> Any:
        return await next_()

    ctx.on("user-questions/request", delegate)
    ctx.on("user-questions/request", delegate)
    assert (await refused(ctx, request())).code == "NO_PROVIDER"
