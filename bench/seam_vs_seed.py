"""Asks/s of `ctx.user_questions.ask()` beside the original design's seam on its own runtime, in the same run.

Run: `uv run python bench/seam_vs_seed.py [ROUNDS] [SECONDS]` (defaults 5 rounds of 1 s per case and side). The
reference is the seed's `ask()` on Node with the published `cordis` (`bench/cordis/`, pinned by its
package-lock.json; `npm ci` there first, or this script runs it). Without `node` it prints one line saying so and
measures Python alone; under `CI=true` a missing `node` is an error instead.

Four cases, each ask building its request as a tool call does: one answerer, and ten delegating answerers that call
`next()` before the one that answers; each without an abort signal and with one. With one means a fresh signal per
ask, as an agent's tool call passes its own: on Node `AbortSignal.timeout(600 s)`, in Python an `AbortController`'s
signal (which `ask()` turns into an anyio cancel scope). Informational rows: one signal shared by every ask (both
sides: neither pays for making a signal), and in Python a deadline the anyio way, the ask inside the caller's
`anyio.fail_after(600)`, without and with a fresh signal. Rounds alternate which side goes first; the figures are
medians of the rounds, and the ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from core import (
    AbortController,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionService,
)

REFERENCE = Path(__file__).parent / "cordis"
DEADLINE_SECONDS = 600
ANSWER = AskUserQuestionAnswer.model_validate({"answers": [{"id": "q1", "selected": ["Yes"]}]})
QUESTIONS = [AskUserQuestionItem.model_validate({"id": "q1", "question": "Go?", "options": [{"label": "Yes"}]})]

Ask = Callable[[], Awaitable[Any]]


async def claim(request: AskUserQuestionRequest, next_: Any) -> AskUserQuestionAnswer:
    return ANSWER


async def delegate(request: AskUserQuestionRequest, next_: Any) -> Any:
    return await next_()


def service_with(delegates: int) -> UserQuestionService:
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    for _ in range(delegates):
        ctx.on("user-questions/request", delegate)
    ctx.on("user-questions/request", claim)
    assert ctx.user_questions is not None
    return ctx.user_questions


def plain(service: UserQuestionService) -> Ask:
    return lambda: service.ask(AskUserQuestionRequest(questions=QUESTIONS))


def fresh_signal(service: UserQuestionService) -> Ask:
    return lambda: service.ask(AskUserQuestionRequest(questions=QUESTIONS, signal=AbortController().signal))


def shared_signal(service: UserQuestionService) -> Ask:
    signal = AbortController().signal
    return lambda: service.ask(AskUserQuestionRequest(questions=QUESTIONS, signal=signal))


def deadline(service: UserQuestionService) -> Ask:
    async def ask() -> Any:
        with anyio.fail_after(DEADLINE_SECONDS):
            return await service.ask(AskUserQuestionRequest(questions=QUESTIONS))

    return ask


def deadline_and_signal(service: UserQuestionService) -> Ask:
    async def ask() -> Any:
        with anyio.fail_after(DEADLINE_SECONDS):
            return await service.ask(AskUserQuestionRequest(questions=QUESTIONS, signal=AbortController().signal))

    return ask


# (label, delegates, Python's ask, the reference's signal mode or None, counts toward the target)
CASES: list[tuple[str, int, Callable[[UserQuestionService], Ask], int | None, bool]] = [
    ("1 answerer, no signal", 0, plain, 0, True),
    ("10 delegating + 1, no signal", 10, plain, 0, True),
    ("1 answerer, a signal per ask", 0, fresh_signal, 1, True),
    ("10 delegating + 1, a signal per ask", 10, fresh_signal, 1, True),
    ("1 answerer, one shared signal", 0, shared_signal, 2, False),
    ("10 delegating + 1, one shared signal", 10, shared_signal, 2, False),
    ("1 answerer, fail_after, no signal", 0, deadline, 1, False),
    ("10 delegating + 1, fail_after, no signal", 10, deadline, 1, False),
    ("1 answerer, fail_after + signal", 0, deadline_and_signal, 1, False),
    ("10 delegating + 1, fail_after + signal", 10, deadline_and_signal, 1, False),
]


async def rate(ask: Ask, seconds: float) -> float:
    """Asks per second, awaited one after another in batches of 1,000 until `seconds` have passed."""
    for _ in range(1000):
        await ask()
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(1000):
            await ask()
        count += 1000
    return count / elapsed


class Reference:
    """The Node process that runs the seed's seam, one case per request line."""

    def __init__(self, node: str) -> None:
        if not (REFERENCE / "node_modules" / "cordis").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                raise SystemExit(f"bench/cordis has no node_modules and npm is absent: run `npm ci` in {REFERENCE}")
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=REFERENCE, check=True)
        self.process = subprocess.Popen(
            [node, "reference.mjs"], cwd=REFERENCE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.readline() == "ready"

    def readline(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def rate(self, delegates: int, signal: int, seconds: float) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{delegates} {signal} {seconds}\n")
        self.process.stdin.flush()
        return float(self.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def find_node() -> str | None:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            raise SystemExit("node is not installed: under CI=true the seed's reference must run")
        print("skipped: the seed's reference (node is not installed); Python figures only")
    return node


async def measure(rounds: int, seconds: float, reference: Reference | None) -> None:
    services = {delegates: service_with(delegates) for delegates in (0, 10)}
    mine: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    seed: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    for round_ in range(rounds):
        for label, delegates, ask, mode, _ in CASES:
            python_first = round_ % 2 == 0
            if python_first:
                mine[label].append(await rate(ask(services[delegates]), seconds))
            if reference is not None and mode is not None:
                seed[label].append(reference.rate(delegates, mode, seconds))
            if not python_first:
                mine[label].append(await rate(ask(services[delegates]), seconds))
        print(f"round {round_ + 1} of {rounds} done", file=sys.stderr)
    print(f"{'case':<42} {'Python asks/s':>14} {'seed asks/s':>12} {'ratio':>6}  target")
    for label, _, _, mode, counts in CASES:
        python = statistics.median(mine[label])
        if reference is None or mode is None:
            print(f"{label:<42} {python:>14,.0f} {'—':>12} {'—':>6}")
            continue
        ratio = statistics.median(m / s for m, s in zip(mine[label], seed[label], strict=True))
        verdict = ("met" if ratio >= 2 else "NOT MET") if counts else "(informational)"
        print(f"{label:<42} {python:>14,.0f} {statistics.median(seed[label]):>12,.0f} {ratio:>5.2f}x  ≥ 2x {verdict}")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    node = find_node()
    reference = Reference(node) if node is not None else None
    try:
        anyio.run(measure, rounds, seconds, reference)
    finally:
        if reference is not None:
            reference.close()


if __name__ == "__main__":
    main()
