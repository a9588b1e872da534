"""The flow every agent's hook shares: read the event, ask `serve`, wait, print the agent's answer, exit 0.

The agent runs the hook for each tool call it would ask about, and the hook must never break the person's session:
whatever goes wrong (no server, input it does not understand, no answer in time, a signal) it prints the agent's
fallback (so the agent asks in its own way) and says why in one line on stderr. A question it opened and gave up on is
cancelled, so every channel retracts it. A deny is said in JSON, never by the exit code.

Asking: POST /v1/permissions, where serve's rules may decide at once (200) or a person is asked (202, the question
record); an older serve answers 404 and is asked through POST /v1/questions instead, with the same question.

Standard library only: it runs on every tool call (see bot/cli.py and tests/bot/test_startup.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from datetime import timedelta
from types import FrameType
from typing import Any

from bot.clients.http import ApiClient, Reply, Unreachable
from bot.hooks.events import BadEvent, read_event
from bot.hooks.plans import Agent, Output, Plan
from bot.permissions.prompt import Decision
from bot.settings.duration_text import format_duration, parse_duration

DEFAULT_WAIT_SECONDS = 3580
"""59m40s: a little under the hour `hook install` gives each agent's entry, so the hook cancels its question itself
rather than being killed with the question left open."""
CONNECT_SECONDS = 2.0
"""How long to try to reach serve at all: Cursor must hear its fallback within 3 s when serve is down."""
ON_TIMEOUT = ("fallback", "deny")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(Exception):
    """SIGTERM or SIGINT: the agent ending the hook, or the person pressing Esc or Ctrl-C."""


class GaveUp(Exception):
    """No decision from handraise; the message says why. `timed_out` when the wait ran out (see `--on-timeout`)."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


def run(args: argparse.Namespace, agent: Agent) -> int:
    """Always 0: stdout carries the agent's answer, its fallback, or nothing."""
    alias = getattr(args, "command", None) == "claude-hook"
    prefix = "handraise claude-hook" if alias else f"handraise hook {agent.name}"
    output = agent.fallback
    previous = _stop_on_signals()
    try:
        output = _decide(args, agent, prefix)
    except Stopped as stop:
        _say(prefix, f"stopped ({stop})", agent.fallback_note)
    except Exception as error:  # the last guard: a bug here must not break the agent's session either
        _say(prefix, f"unexpected {type(error).__name__}: {error}", agent.fallback_note)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if output is not None:
        sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


def _decide(args: argparse.Namespace, agent: Agent, prefix: str) -> Output | None:
    try:
        labels = parse_labels(args.label)
        wait = parse_duration(args.timeout).total_seconds() if args.timeout else DEFAULT_WAIT_SECONDS
    except ValueError as error:
        return _fallback(prefix, str(error), agent)
    try:
        plan = agent.plan(read_event(sys.stdin.buffer), labels)
    except BadEvent as error:
        return _fallback(prefix, str(error), agent)
    if plan is None:
        return agent.fallback  # an event the agent sends that handraise leaves alone: no word on stderr
    client = ApiClient(args.server, os.environ.get("HANDRAISE_API_TOKEN"), connect_timeout=CONNECT_SECONDS)
    try:
        return _ask(client, plan, time.monotonic() + wait)
    except GaveUp as gave_up:
        if gave_up.timed_out and getattr(args, "on_timeout", "fallback") == "deny":
            _say(prefix, str(gave_up), "denied it (--on-timeout deny)")
            waited = format_duration(timedelta(seconds=wait))
            return plan.respond(Decision("deny", f"No answer through handraise within {waited}; denied."))
        return _fallback(prefix, str(gave_up), agent)


def _ask(client: ApiClient, plan: Plan, deadline: float) -> Output:
    """The agent's output for the decision. Raises GaveUp (and cancels the question it opened) when there is none."""
    # Hold SIGTERM/SIGINT from before the POST until the question's id is known: a signal arriving while the question
    # is created would otherwise end the wait with the question left open in every channel.
    _hold(STOP_SIGNALS)
    try:
        reply = _open(client, plan)
    except Unreachable as error:
        _release(STOP_SIGNALS)
        raise GaveUp(f"{error}; is `handraise serve` running?") from None
    except BaseException:
        _release(STOP_SIGNALS)
        raise
    if reply.status == 200 and plan.permission is not None:
        _release(STOP_SIGNALS)
        return plan.respond(_ruling(reply))
    question_id = reply.body.get("id")
    if reply.status != 202 or not isinstance(question_id, str):
        _release(STOP_SIGNALS)
        raise GaveUp(_refusal(reply) if reply.status != 202 else "the server's reply names no question")
    try:
        _release(STOP_SIGNALS)  # a signal held during the POST is delivered here, as Stopped
        resolved = client.wait_resolved(question_id, deadline, patience=max(0.0, deadline - time.monotonic()))
    except (Stopped, Unreachable) as error:
        client.cancel(question_id)
        raise GaveUp(f"stopped waiting for {question_id} ({error or 'signalled'}); cancelled it") from None
    if resolved is None:
        client.cancel(question_id)
        raise GaveUp(f"no answer to {question_id} in time; cancelled it", timed_out=True)
    if resolved.status != 200:
        raise GaveUp(_refusal(resolved))
    status = resolved.body.get("status")
    if status != "answered":
        error = resolved.body.get("error")
        said = error.get("message", "") if isinstance(error, dict) else ""
        raise GaveUp(f"{question_id} {status}: {said}", timed_out=status == "expired")
    answer = resolved.body.get("answer")
    by = resolved.body.get("resolvedBy")
    output = plan.answered(answer if isinstance(answer, dict) else {}, by if isinstance(by, str) else None)
    if output is None:
        raise GaveUp(f"{question_id} was skipped")
    return output


def _open(client: ApiClient, plan: Plan) -> Reply:
    """POST the permission (an older serve without /v1/permissions: the question itself). Raises Unreachable."""
    if plan.permission is not None:
        body = {"permission": plan.permission.to_wire(), "agent": plan.agent}
        reply = client.call("POST", "/v1/permissions", body)
        if reply.status != 404:
            return reply
    return client.call("POST", "/v1/questions", {"questions": plan.questions, "agent": plan.agent})


def _ruling(reply: Reply) -> Decision:
    """A rule's decision from serve's 200. Raises GaveUp for a body that is not the documented shape."""
    behavior, message = reply.body.get("behavior"), reply.body.get("message")
    said = message if isinstance(message, str) else ""
    if behavior == "allow":
        return Decision("allow", said or "Allowed by a handraise rule.")
    if behavior == "deny":
        return Decision("deny", said or "Denied by a handraise rule.")
    raise GaveUp("the server's rule decision is neither allow nor deny")


def _refusal(reply: Reply) -> str:
    error: Any = reply.body.get("error")
    error = error if isinstance(error, dict) else {}
    return f"{error.get('code', f'HTTP_{reply.status}')}: {error.get('message', 'the server refused the question')}"


def _fallback(prefix: str, reason: str, agent: Agent) -> Output | None:
    _say(prefix, reason, agent.fallback_note)
    return agent.fallback


def _say(prefix: str, reason: str, then: str) -> None:
    print(f"{prefix}: {' '.join(reason.split())}; {then}", file=sys.stderr)


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """`--label key=value` flags as a dict. Raises ValueError for a malformed one.

    The same rule as `handraise ask` (bot/clients/ask.py), whose module is not imported here for its start-up cost.
    """
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--label {pair!r}: write it as key=value")
        labels[key] = value
    return labels


def _stop_on_signals() -> dict[signal.Signals, Any]:
    """SIGTERM and SIGINT raise Stopped from now on; returns the handlers to put back. Only the main thread can take
    signals: elsewhere (an embedding program's worker thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def _hold(signals: tuple[signal.Signals, ...]) -> None:
    if hasattr(signal, "pthread_sigmask"):  # not on Windows, where there is no window to close
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)


def _release(signals: tuple[signal.Signals, ...]) -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
