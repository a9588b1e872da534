"""A small Cordis: events dispatched as waterfalls, services, plugins that undo themselves, and agent scopes.

A tree of contexts shares one registry of listeners and services. A child context exists to remember what was
registered through it (so a plugin's `dispose()` removes exactly that) and, for an agent's context, which agent
its listeners are scoped to.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from core.agents import AgentRegistry
    from core.service import UserQuestionService

log = logging.getLogger(__name__)

Dispose = Callable[[], None]
Next = Callable[[], Awaitable[Any]]
Listener = Callable[[Any, Next], Awaitable[Any]]
Fallback = Callable[[], Awaitable[Any]]
P = TypeVar("P")


class _ListenerEntry:
    __slots__ = ("listener", "scope")

    def __init__(self, listener: Listener, scope: weakref.ref[object] | None) -> None:
        self.listener = listener
        self.scope = scope

    def admits(self, target: object | None) -> bool:
        # Unscoped listeners hear everything; scoped ones only their own agent (agentless requests never).
        return self.scope is None or (target is not None and self.scope() is target)


class _Chain:
    """One dispatch: the snapshot of admitted listeners, the payload and the fallback."""

    __slots__ = ("event", "fallback", "listeners", "payload")

    def __init__(self, event: str, listeners: list[Listener], payload: object, fallback: Fallback) -> None:
        self.event = event
        self.listeners = listeners
        self.payload = payload
        self.fallback = fallback


class _Next:
    """The `next` handed to listener `index - 1`: calling it runs listener `index` (or the fallback after the last).

    A class rather than nested closures: one coroutine frame per hop keeps delegation cheaper than validation.
    """

    __slots__ = ("called", "chain", "finished", "index", "result")

    def __init__(self, chain: _Chain, index: int) -> None:
        self.chain = chain
        self.index = index
        self.called = False
        self.finished = False
        self.result: Any = None

    async def __call__(self) -> Any:
        chain = self.chain
        if self.called:
            raise RuntimeError(f"next() called more than once by a {chain.event!r} listener")
        self.called = True
        if self.index == len(chain.listeners):
            result = await chain.fallback()
        else:
            listener = chain.listeners[self.index]
            follow = _Next(chain, self.index + 1)
            result = await listener(chain.payload, follow)
            if result is None:
                log.warning("a %r listener (%s) returned None; treating it as delegation", chain.event, _name(listener))
                if follow.finished:
                    result = follow.result
                elif follow.called:
                    raise RuntimeError(f"a {chain.event!r} listener returned None while its next() was still running")
                else:
                    result = await follow()
        self.finished = True
        self.result = result
        return result


class _Registry:
    def __init__(self) -> None:
        self.listeners: dict[str, list[_ListenerEntry]] = {}
        self.services: dict[str, object] = {}
        self.scoped: weakref.WeakKeyDictionary[object, Context] = weakref.WeakKeyDictionary()


class PluginHandle:
    """Returned by `Context.plugin`; `dispose()` undoes everything the plugin registered, newest first."""

    def __init__(self, ctx: Context, value: object) -> None:
        self.ctx = ctx
        self.value = value
        self._disposed = False
        self._detach: Dispose = _noop

    @property
    def disposed(self) -> bool:
        return self._disposed

    def dispose(self) -> None:
        """Remove the plugin's listeners, services, cleanups and child plugins. Safe to call twice."""
        if self._disposed:
            return
        self._disposed = True
        self._detach()
        self.ctx._dispose_all()  # pyright: ignore[reportPrivateUsage]


class Context:
    """Where answerers register (`on`), services live (`provide`/`get`) and requests are dispatched (`waterfall`)."""

    def __init__(self) -> None:
        self._registry = _Registry()
        self._scope: weakref.ref[object] | None = None
        self._disposers: list[Dispose] = []

    def _child(self, scope: weakref.ref[object] | None) -> Context:
        child = Context.__new__(Context)
        child._registry = self._registry
        child._scope = scope
        child._disposers = []
        return child

    def _track(self, dispose: Dispose) -> Dispose:
        """Remember `dispose` for this context's plugin disposal and return an idempotent version of it."""
        done = False

        def once() -> None:
            nonlocal done
            if done:
                return
            done = True
            if once in self._disposers:
                self._disposers.remove(once)
            dispose()

        self._disposers.append(once)
        return once

    def _dispose_all(self) -> None:
        while self._disposers:
            disposer = self._disposers[-1]
            try:
                disposer()
            except Exception:
                # Keep undoing the rest: a half-disposed plugin is worse than a logged failure.
                log.exception("a plugin cleanup failed")
                if self._disposers and self._disposers[-1] is disposer:
                    self._disposers.pop()

    # --- events -------------------------------------------------------------------------------------------

    def on(self, event: str, listener: Listener, *, prepend: bool = False) -> Dispose:
        """Register `listener` for `event`; it runs after earlier ones (first, with `prepend`). Returns a disposer."""
        entry = _ListenerEntry(listener, self._scope)
        entries = self._registry.listeners.setdefault(event, [])
        if prepend:
            entries.insert(0, entry)
        else:
            entries.append(entry)

        def remove() -> None:
            if entry in entries:
                entries.remove(entry)

        return self._track(remove)

    async def waterfall(self, event: str, payload: object, fallback: Fallback, *, target: object | None = None) -> Any:
        """Call the admitted listeners of `event` in order until one returns a value; `fallback` after the last.

        Each listener gets `(payload, next)`; `return await next()` delegates to the following one. A listener that
        returns None is treated as delegating (with a warning): that is a bug in the listener, not a claim.
        Errors propagate to the caller.
        """
        entries = [entry.listener for entry in self._registry.listeners.get(event, ()) if entry.admits(target)]
        return await _Next(_Chain(event, entries, payload, fallback), 0)()

    # --- services -----------------------------------------------------------------------------------------

    def provide(self, name: str, service: object) -> Dispose:
        """Make `service` available as `ctx.get(name)` across this context tree until disposed.

        Raises RuntimeError when `name` is already provided: two owners of one service is a wiring bug.
        """
        services = self._registry.services
        if name in services:
            raise RuntimeError(f"service {name!r} is already provided; dispose the plugin that provides it first")
        services[name] = service

        def withdraw() -> None:
            if services.get(name) is service:
                del services[name]

        return self._track(withdraw)

    def get(self, name: str) -> object | None:
        return self._registry.services.get(name)

    @property
    def agents(self) -> AgentRegistry | None:
        return cast("AgentRegistry | None", self.get("agents"))

    @property
    def user_questions(self) -> UserQuestionService | None:
        return cast("UserQuestionService | None", self.get("user_questions"))

    # --- plugins and scopes -------------------------------------------------------------------------------

    def plugin(self, apply: Callable[..., P], *args: Any, **kwargs: Any) -> PluginHandle:
        """Run `apply(child_ctx, *args, **kwargs)` (a class or a function) and return its handle.

        The handle's `value` is what `apply` returned (the instance, for a class). If `apply` raises, what it had
        registered is undone and the error propagates.
        """
        child = self._child(self._scope)
        handle = PluginHandle(child, None)
        handle._detach = self._track(handle.dispose)  # pyright: ignore[reportPrivateUsage]
        try:
            value = apply(child, *args, **kwargs)
        except BaseException:
            handle.dispose()
            raise
        if inspect.isawaitable(value):
            handle.dispose()
            if inspect.iscoroutine(value):
                value.close()
            raise TypeError(f"plugin {_name(apply)} is async; apply it with a sync function that starts its tasks")
        handle.value = value
        return handle

    def on_dispose(self, cleanup: Callable[[], None]) -> Dispose:
        """Run `cleanup` when this context's plugin is disposed (before what was registered earlier)."""
        return self._track(cleanup)

    def for_agent(self, agent: object) -> Context:
        """The agent's scoped context (the same object on every call): its listeners hear only that agent."""
        scoped = self._registry.scoped.get(agent)
        if scoped is None:
            scoped = self._child(weakref.ref(agent))
            self._registry.scoped[agent] = scoped
        return scoped


def _name(obj: object) -> str:
    return getattr(obj, "__qualname__", None) or repr(obj)


def _noop() -> None:
    return None
