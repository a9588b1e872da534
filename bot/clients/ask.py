"""`handraise ask`: submit a question to the server, wait (re-polling across server restarts), print the answer.

Standard library only (see bot/cli.py): it starts in a shell loop for every question.

Exit codes: 0 answered, 1 failed otherwise, 2 bad input, 3 cancelled/expired/timed out, 4 no answerer,
5 server unreachable. Errors go to stderr on one line; the answer JSON alone goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bot.clients.http import ApiClient, Reply, Unreachable, compact_answer
from bot.errors import BotErrorCode, HandraiseError
from bot.questions.validation import RequestRefused, parse_ask_body
from bot.settings.duration_text import parse_duration

ANSWERED, FAILED, BAD_INPUT, ENDED, NO_ANSWERER, UNREACHABLE = 0, 1, 2, 3, 4, 5

EXIT_OF_STATUS = {"answered": ANSWERED, "cancelled": ENDED, "expired": ENDED, "failed": FAILED}
EXIT_OF_CODE = {"NO_PROVIDER": NO_ANSWERER, "ASK_TIMEOUT": ENDED, "ASK_CANCELLED": ENDED, "ASK_ABORTED": ENDED}


class BadInput(HandraiseError):
    """A flag or file the user gave cannot be used; the message says which and how to fix it."""

    code = BotErrorCode.BAD_INPUT


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """The POST body from --json or from the flags. Raises BadInput."""
    if args.json:
        try:
            text = sys.stdin.read() if args.json == "-" else Path(args.json).read_text()
            body = json.loads(text)
        except (OSError, json.JSONDecodeError) as error:
            raise BadInput(f"--json {args.json}: {error}") from None
        if not isinstance(body, dict):
            raise BadInput(f"--json {args.json}: expected an object with a 'questions' list")
        return body
    if not args.question:
        raise BadInput('give the question, e.g. handraise ask "Deploy v2 to prod?" -o Yes -o No')
    item: dict[str, Any] = {"id": "q1", "question": args.question}
    if args.option:
        item["options"] = [{"label": label} for label in args.option]
    if args.multi:
        item["multiSelect"] = True
    if args.header:
        item["header"] = args.header
    if args.detail:
        item["detail"] = _read_detail(args.detail)
    if args.plan_review:
        item["intent"] = {"kind": "plan-review", "approve": args.plan_review}
        if args.reject:
            item["intent"]["reject"] = args.reject
    elif args.reject:
        raise BadInput("--reject names a plan review's option: give --plan-review APPROVE_LABEL too")
    body: dict[str, Any] = {"questions": [item]}
    labels = agent_labels(args.agent, args.label, args.agent_name, name_flag="--agent-name")
    if args.agent:
        body["agent"] = {"id": args.agent, "name": args.agent_name, "labels": labels}
    return body


def checked_body(args: argparse.Namespace) -> dict[str, Any]:
    """The body, held to the server's own limits (bot.questions.validation) so that bad input fails here, before
    sending."""
    body = request_body(args)
    try:
        parse_ask_body(json.dumps(body).encode())  # the same bytes the server would read, size included
    except RequestRefused as refused:
        raise BadInput(refused.message) from None
    return body


def run_ask(args: argparse.Namespace) -> int:
    try:
        body = checked_body(args)
        deadline = time.monotonic() + parse_duration(args.timeout).total_seconds() if args.timeout else None
    except (BadInput, ValueError) as error:
        return _fail(BAD_INPUT, str(error))
    client = ApiClient(args.server, os.environ.get("HANDRAISE_API_TOKEN"))
    try:
        reply = client.call("POST", "/v1/questions", body)
    except Unreachable as error:
        return _fail(UNREACHABLE, f"{error}; is `handraise serve` running?")
    if reply.status != 202:
        return _refused(reply)
    question_id = str(reply.body["id"])
    print(f"handraise: asked {question_id}; waiting for an answer", file=sys.stderr)
    return _wait(client, question_id, deadline)


def _wait(client: ApiClient, question_id: str, deadline: float | None) -> int:
    try:
        reply = client.wait_resolved(question_id, deadline)
    except Unreachable as error:
        return _fail(UNREACHABLE, str(error))
    if reply is None:
        client.cancel(question_id)
        return _fail(ENDED, f"no answer to {question_id} in time; cancelled it")
    if reply.status != 200:
        return _refused(reply)
    status = reply.body.get("status")
    if status == "answered":
        print(compact_answer(reply.body["answer"]))
        return ANSWERED
    error = reply.body.get("error") or {}
    code = str(error.get("code", ""))
    return _fail(EXIT_OF_CODE.get(code, EXIT_OF_STATUS.get(str(status), FAILED)), f"{status}: {error.get('message')}")


def _refused(reply: Reply) -> int:
    error = reply.body.get("error") or {}
    code = str(error.get("code", f"HTTP_{reply.status}"))
    message = f"{code}: {error.get('message', 'the server refused the request')}"
    if code in EXIT_OF_CODE:
        return _fail(EXIT_OF_CODE[code], message)
    return _fail(BAD_INPUT if reply.status in (400, 413, 422) else FAILED, message)


def _fail(code: int, message: str) -> int:
    print(f"handraise: {message}", file=sys.stderr)
    return code


def _read_detail(value: str) -> str:
    if not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).read_text()
    except OSError as error:
        raise BadInput(f"--detail {value}: {error.strerror or error}") from None


def agent_labels(agent: str | None, pairs: list[str], name: str | None, *, name_flag: str) -> dict[str, str]:
    """The `--label`s of the asking agent. Raises BadInput for labels or a name with no `--agent` to carry them:
    dropping them would route the question as agentless, to other people than meant (or to nobody)."""
    labels = parse_labels(pairs)
    if not agent and (labels or name):
        flag = "--label" if labels else name_flag
        raise BadInput(f"{flag} describes the asking agent: give its id with --agent too")
    return labels


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """`--label key=value` flags as a dict (used by `ask` and `routes`). Raises BadInput for a malformed one."""
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--label {pair!r}: write it as key=value")
        labels[key] = value
    return labels
