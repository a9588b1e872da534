"""`handraise claude-hook`: answer Claude Code's questions and permission prompts through the running `serve`.

Claude Code runs this command for each hook event (Hooks reference, code.claude.com/docs/en/hooks): one JSON object on
stdin, one decision on stdout. It must never break the person's session: whatever goes wrong (no server, no route for
this project, input it does not understand, no answer in time) it exits 0 with no output, so Claude Code carries on
with its own prompt, and it says why in one line on stderr. A question it opened and gave up on is cancelled, so
Slack and email retract it.

Standard library only: it runs on every question and permission prompt (see bot/cli.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from bot.claude import translate
from bot.clients.ask import BadInput, parse_labels
from bot.clients.http import ApiClient, Reply, Unreachable
from bot.settings.duration_text import parse_duration

HOOK_TIMEOUT_SECONDS = 3600
"""The `timeout` that `claude-hook install` writes into the hook entries (Claude Code's own default is 600 s)."""
MARGIN_SECONDS = 20
DEFAULT_WAIT_SECONDS = HOOK_TIMEOUT_SECONDS - MARGIN_SECONDS
"""Give up a little before Claude Code would kill the hook, so the question is cancelled rather than left open."""
MAX_STDIN_BYTES = 4 * 1024 * 1024


class Stopped(Exception):
    """SIGTERM or SIGINT while waiting (Claude Code ending the hook, or the person pressing Esc)."""


def run_hook(args: argparse.Namespace) -> int:
    """Always 0: stdout carries a decision or nothing at all."""
    try:
        labels = parse_labels(args.label)
        wait = parse_duration(args.timeout).total_seconds() if args.timeout else DEFAULT_WAIT_SECONDS
    except (BadInput, ValueError) as error:
        return _pass(f"{error}")
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        # Read the rest unseen: Claude Code should not meet a broken pipe for sending too much.
        while sys.stdin.buffer.read(1 << 16):
            pass
        return _pass(f"stdin is over {MAX_STDIN_BYTES} bytes")
    try:
        event = translate.parse_event(raw.decode("utf-8", errors="strict"))
        plan = _plan(event)
    except (translate.NotAHookEvent, UnicodeDecodeError) as error:
        return _pass(str(error))
    if plan is None:
        return _pass(f"{event.event} for {event.tool_name} is not something handraise answers", quiet=True)
    questions, decide = plan
    body = {"questions": questions, "agent": translate.agent_of(event, labels)}
    client = ApiClient(args.server, os.environ.get("HANDRAISE_API_TOKEN"))
    output = _ask(client, body, time.monotonic() + wait, decide)
    if output is not None:
        sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    return 0


Decide = Callable[[dict[str, Any], str | None], dict[str, Any] | None]
"""The answer (wire JSON) and who gave it → the hook's output, or None for no opinion."""


def _plan(event: translate.HookEvent) -> tuple[list[dict[str, Any]], Decide] | None:
    """The questions to ask and how an answer becomes the hook's output; None for an event left to Claude Code."""
    if event.tool_name == translate.ASK_TOOL and event.event in ("PreToolUse", "PermissionRequest"):
        questions = translate.questions_of(event.tool_input)
        if event.event == "PreToolUse":
            return questions, lambda answer, by: translate.pre_tool_use_answer(event.tool_input, answer)
        return questions, lambda answer, by: translate.permission_answer(event.tool_input, answer)
    if event.event == "PermissionRequest":
        return [translate.permission_question(event)], translate.permission_decision
    return None


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _ask(client: ApiClient, body: dict[str, Any], deadline: float, decide: Decide) -> dict[str, Any] | None:
    # Hold SIGTERM/SIGINT from before the POST until the handler knows the question's id: a signal arriving while
    # the question is created would otherwise end the process and leave the question open in every channel.
    _hold(STOP_SIGNALS)
    try:
        reply = client.call("POST", "/v1/questions", body)
    except Unreachable as error:
        _release(STOP_SIGNALS)
        return _none(f"{error}; is `handraise serve` running?")
    if reply.status != 202:
        _release(STOP_SIGNALS)
        return _none(_refusal(reply))
    question_id = str(reply.body.get("id"))
    previous = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}
    try:
        _release(STOP_SIGNALS)  # a signal held during the POST is delivered here, as Stopped
        resolved = client.wait_resolved(question_id, deadline, patience=max(0.0, deadline - time.monotonic()))
    except (Stopped, Unreachable) as error:
        client.cancel(question_id)
        return _none(f"stopped waiting for {question_id} ({error or 'signalled'}); cancelled it")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if resolved is None:
        client.cancel(question_id)
        return _none(f"no answer to {question_id} in time; cancelled it")
    if resolved.status != 200:
        return _none(_refusal(resolved))
    if resolved.body.get("status") != "answered":
        error = resolved.body.get("error") or {}
        return _none(f"{question_id} {resolved.body.get('status')}: {error.get('message', '')}")
    output = decide(resolved.body.get("answer") or {}, resolved.body.get("resolvedBy"))
    if output is None:
        return _none(f"{question_id} was skipped; leaving the decision to Claude Code")
    return output


def _hold(signals: tuple[signal.Signals, ...]) -> None:
    if hasattr(signal, "pthread_sigmask"):  # not on Windows, where there is no window to close
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)


def _release(signals: tuple[signal.Signals, ...]) -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def _refusal(reply: Reply) -> str:
    error = reply.body.get("error") or {}
    return f"{error.get('code', f'HTTP_{reply.status}')}: {error.get('message', 'the server refused the question')}"


def _none(reason: str) -> None:
    _pass(reason)
    return None


def _pass(reason: str, *, quiet: bool = False) -> int:
    """No opinion: Claude Code goes on as if there were no hook (its own prompt)."""
    if not quiet:
        print(f"handraise claude-hook: {reason}; Claude Code will ask in the terminal", file=sys.stderr)
    return 0
