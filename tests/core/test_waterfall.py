"""The waterfall: order, prepend, claims, delegation, scopes, disposal, and listeners that return None."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from core import Agent, AskUserQuestionAnswer, AskUserQuestionRequest, Context, UserQuestionError

from .helpers import answer_first, make_context, question, registry, request, service

pytestmark = pytest.mark.anyio


def delegating(log: list[str], name: str) -> Any:
    async def listener(req: AskUserQuestionRequest, next_: Any) -> Any:
        log.append(name)
        return await next_()

    return listener


def claiming(log: list[str], name: str) -> Any:
    async def listener(req: AskUserQuestionRequest, next_: Any) -> Any:
        log.append(name)
        return {"answers": [{"id": req.questions[0].id, "selected": [], "custom": name}]}

    return listener


async def custom_of(ctx: Context, req: AskUserQuestionRequest | None = None) -> str | None:
    answer = await service(ctx).ask(req or request())
    return answer.answers[0].custom


async def test_listeners_run_in_registration_order_and_the_first_claim_wins() -> None:
    ctx, log = make_context(), []
    ctx.on("user-questions/request", delegating(log, "a"))
    ctx.on("user-questions/request", claiming(log, "b"))
    ctx.on("user-questions/request", claiming(log, "c"))
    assert await custom_of(ctx) == "b"
    assert log == ["a", "b"]


async def test_prepend_puts_a_listener_first() -> None:
    ctx, log = make_context(), []
    ctx.on("user-questions/request", claiming(log, "late"))
    ctx.on("user-questions/request", claiming(log, "first"), prepend=True)
    assert await custom_of(ctx) == "first"


async def test_disposed_listener_no_longer_hears_and_double_dispose_is_harmless() -> None:
    ctx, log = make_context(), []
    dispose = ctx.on("user-questions/request", claiming(log, "gone"))
    ctx.on("user-questions/request", claiming(log, "kept"))
    dispose()
    dispose()
    assert await custom_of(ctx) == "kept"
    assert log == ["kept"]


async def test_an_answer_returned_as_a_model_is_accepted() -> None:
    ctx = make_context()

    async def answer(req: AskUserQuestionRequest, next_: Any) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer.model_validate({"answers": [{"id": "q1", "selected": ["A"]}]})

    ctx.on("user-questions/request", answer)
    assert (await service(ctx).ask(request())).answers[0].selected == ["A"]


async def test_listener_returning_none_is_treated_as_delegation_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx, log = make_context(), []

    async def buggy(req: AskUserQuestionRequest, next_: Any) -> None:
        log.append("buggy")

    ctx.on("user-questions/request", buggy)
    ctx.on("user-questions/request", claiming(log, "next"))
    with caplog.at_level(logging.WARNING, logger="core.context"):
        assert await custom_of(ctx) == "next"
    assert log == ["buggy", "next"]
    assert "returned None" in caplog.text


async def test_listener_returning_none_after_calling_next_keeps_that_result() -> None:
    ctx, log = make_context(), []

    async def forgetful(req: AskUserQuestionRequest, next_: Any) -> None:
        await next_()

    ctx.on("user-questions/request", forgetful)
    ctx.on("user-questions/request", claiming(log, "inner"))
    assert await custom_of(ctx) == "inner"
    assert log == ["inner"]


async def test_calling_next_twice_is_an_error() -> None:
    ctx = make_context()

    async def greedy(req: AskUserQuestionRequest, next_: Any) -> Any:
        await next_()
        return await next_()

    ctx.on("user-questions/request", greedy)
    ctx.on("user-questions/request", claiming([], "x"))
    with pytest.raises(RuntimeError, match="more than once"):
        await service(ctx).ask(request())


async def test_answer_of_the_wrong_shape_is_a_bug_reported_as_type_error() -> None:
    ctx = make_context()

    async def wrong(req: AskUserQuestionRequest, next_: Any) -> Any:
        return {"answer": "yes"}

    ctx.on("user-questions/request", wrong)
    with pytest.raises(TypeError, match="not an AskUserQuestionAnswer"):
        await service(ctx).ask(request())


async def test_listener_registered_during_dispatch_waits_for_the_next_request() -> None:
    ctx, log = make_context(), []

    async def registering(req: AskUserQuestionRequest, next_: Any) -> Any:
        ctx.on("user-questions/request", claiming(log, "added"), prepend=True)
        return await next_()

    ctx.on("user-questions/request", registering)
    with pytest.raises(UserQuestionError) as caught:
        await service(ctx).ask(request())
    assert caught.value.code == "NO_PROVIDER"
    assert await custom_of(ctx) == "added"


class TestScopes:
    async def test_agent_scoped_listener_hears_only_its_agent(self) -> None:
        ctx, log = make_context(), []
        alice, bob = Agent("alice"), Agent("bob")
        registry(ctx).enter(alice)
        registry(ctx).enter(bob)
        alice.ctx.on("user-questions/request", claiming(log, "alice-ui"))
        ctx.on("user-questions/request", claiming(log, "global"))
        assert await custom_of(ctx, request(agent=alice)) == "alice-ui"
        assert await custom_of(ctx, request(agent=bob)) == "global"
        assert log == ["alice-ui", "global"]

    async def test_agentless_request_reaches_only_unscoped_listeners(self) -> None:
        ctx, log = make_context(), []
        alice = Agent("alice")
        registry(ctx).enter(alice)
        alice.ctx.on("user-questions/request", claiming(log, "alice-ui"))
        ctx.on("user-questions/request", claiming(log, "global"))
        assert await custom_of(ctx, request()) == "global"
        assert log == ["global"]

    async def test_scoped_listener_does_not_hear_a_new_agent_reusing_the_id(self) -> None:
        ctx, log = make_context(), []
        old = Agent("worker")
        leave = registry(ctx).enter(old)
        old.ctx.on("user-questions/request", claiming(log, "old-ui"))
        leave()
        new = Agent("worker")
        registry(ctx).enter(new)
        ctx.on("user-questions/request", claiming(log, "global"))
        assert await custom_of(ctx, request(agent=new)) == "global"

    async def test_for_agent_returns_the_same_context_every_time(self) -> None:
        ctx = make_context()
        agent = Agent("a")
        registry(ctx).enter(agent)
        assert ctx.for_agent(agent) is ctx.for_agent(agent) is agent.ctx

    async def test_agent_ctx_before_entering_is_a_clear_error(self) -> None:
        with pytest.raises(RuntimeError, match="enters an AgentRegistry"):
            _ = Agent("loose").ctx

    async def test_plugin_on_an_agent_context_stays_scoped(self) -> None:
        ctx, log = make_context(), []
        alice, bob = Agent("alice"), Agent("bob")
        registry(ctx).enter(alice)
        registry(ctx).enter(bob)
        alice.ctx.plugin(lambda child: child.on("user-questions/request", claiming(log, "alice-plugin")))
        ctx.on("user-questions/request", claiming(log, "global"))
        assert await custom_of(ctx, request(agent=bob)) == "global"
        assert await custom_of(ctx, request(agent=alice)) == "alice-plugin"


class TestPlugins:
    async def test_disposing_a_plugin_removes_its_listeners_and_services(self) -> None:
        ctx, log = make_context(), []

        def apply(child: Context) -> str:
            child.on("user-questions/request", claiming(log, "plugin"))
            child.provide("greeter", "hello")
            return "applied"

        handle = ctx.plugin(apply)
        assert handle.value == "applied"
        assert ctx.get("greeter") == "hello"
        assert await custom_of(ctx) == "plugin"
        handle.dispose()
        handle.dispose()
        assert handle.disposed
        assert ctx.get("greeter") is None
        with pytest.raises(UserQuestionError):
            await custom_of(ctx)

    async def test_disposal_runs_newest_first_and_reaches_child_plugins(self) -> None:
        ctx, order = Context(), []

        def inner(child: Context) -> None:
            child.on_dispose(lambda: order.append("inner"))

        def outer(child: Context) -> None:
            child.on_dispose(lambda: order.append("outer-first"))
            child.plugin(inner)
            child.on_dispose(lambda: order.append("outer-last"))

        ctx.plugin(outer).dispose()
        assert order == ["outer-last", "inner", "outer-first"]

    async def test_a_class_plugin_is_constructed_with_the_child_context_and_extra_arguments(self) -> None:
        class Greeter:
            def __init__(self, ctx: Context, greeting: str) -> None:
                self.greeting = greeting
                ctx.provide("greeter", self)

        ctx = Context()
        handle = ctx.plugin(Greeter, "hi")
        assert isinstance(handle.value, Greeter)
        assert ctx.get("greeter") is handle.value
        handle.dispose()
        assert ctx.get("greeter") is None

    async def test_a_plugin_that_fails_to_apply_leaves_nothing_behind(self) -> None:
        ctx = Context()

        def broken(child: Context) -> None:
            child.provide("half", object())
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            ctx.plugin(broken)
        assert ctx.get("half") is None

    async def test_an_async_plugin_is_refused_clearly(self) -> None:
        async def apply(child: Context) -> None:
            return None

        with pytest.raises(TypeError, match="is async"):
            Context().plugin(apply)

    async def test_providing_a_service_twice_is_a_wiring_error(self) -> None:
        ctx = make_context()
        with pytest.raises(RuntimeError, match="already provided"):
            ctx.plugin(lambda child: child.provide("user_questions", object()))

    async def test_a_failing_cleanup_does_not_stop_the_others(self, caplog: pytest.LogCaptureFixture) -> None:
        ctx, order = Context(), []

        def apply(child: Context) -> None:
            child.on_dispose(lambda: order.append("first"))
            child.on_dispose(explode)

        with caplog.at_level(logging.ERROR):
            ctx.plugin(apply).dispose()
        assert order == ["first"]
        assert "cleanup failed" in caplog.text

    async def test_disposing_the_parent_plugin_disposes_the_child_handle(self) -> None:
        ctx = Context()
        handles = []

        def outer(child: Context) -> None:
            handles.append(child.plugin(lambda grandchild: grandchild.provide("deep", 1)))

        outer_handle = ctx.plugin(outer)
        outer_handle.dispose()
        assert handles[0].disposed
        assert ctx.get("deep") is None

    async def test_disposing_the_service_plugin_withdraws_ask(self) -> None:
        ctx = Context()
        handle = ctx.plugin(lambda child: None)
        handle.dispose()
        assert ctx.user_questions is None and ctx.agents is None


async def test_waterfall_can_be_used_for_other_events_with_a_fallback() -> None:
    ctx = Context()

    async def fallback() -> str:
        return "fallback"

    assert await ctx.waterfall("other", {"x": 1}, fallback) == "fallback"

    async def double(payload: dict[str, int], next_: Any) -> int:
        return payload["x"] * 2

    ctx.on("other", double)
    assert await ctx.waterfall("other", {"x": 21}, fallback) == 42


async def test_answers_pass_through_unchanged_for_several_questions() -> None:
    ctx = make_context()

    async def answer(req: AskUserQuestionRequest, next_: Any) -> Any:
        return answer_first(req)

    ctx.on("user-questions/request", answer)
    req = request(question("a", options=[{"label": "X"}]), question("b", multiSelect=True, options=[{"label": "Y"}]))
    result = await service(ctx).ask(req)
    assert [(item.id, item.selected) for item in result.answers] == [("a", ["X"]), ("b", ["Y"])]


def explode() -> None:
    raise ZeroDivisionError("a broken callback")
