"""What #32's operating features cost an API ask and an inbox answer: `handraise serve` from a commit before them
beside the working tree, in one run, taking turns.

Run: `uv run python bench/ops_cost.py [ROUNDS] [PER_ROUND] [--before REV] [--also REV]… [--without-webhook]`
(defaults 6, 2000, and `b95288c`: main just before #32's first merge, `ef5e9da^`). The commit's `bot` and `core`
packages are unpacked with `git archive` into a temporary directory and run with this interpreter. Three servers
start on fresh stores:

- `before`: the commit's code (no metrics, no audit chain, no webhook queue, no JSON logs);
- `after`: the working tree as configured by default (metrics and the audit chain on; no webhook, so nothing is
  queued);
- `after+json+webhook`: the working tree with `log_format = "json"` and one `[[webhooks]]` to a receiver in this
  process that answers 204, so every answer also queues a delivery in its commit and the sender posts it;
- one more for each `--also REV`, run as `before` is (to find which commit between two made a difference).

`--without-webhook` leaves the third out: two servers taking turns measure the default features' cost with less
noise (the third's webhook sender and receiver, and its CPU, fall into the others' rounds).

Each round asks PER_ROUND questions of each server with 32 clients, then answers them in the web inbox, the servers
taking turns at going first, and waits 3 s after the answers (the sender polls its queue every 2 s). Prints, per
round and as medians, each server's rates and the CPU its process spent (user + system, every thread) per ask, per
answer and per question (ask, answer and whatever followed them until the next round), and, against `before`, the
medians of each round's own ratios (the machine's speed drifts over a run by more than 5 %). Target (#32 item 6): the
operating features cost at most 5 % of API throughput. Commits other than #32's lie between `before` and `after`
(the benchmark says what the code costs then and now, not which commit made the difference).
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
from aiohttp import web
from api_floor import Server, Target, wait_delivered
from serving import cpu_seconds, free_port, start_serve

BEFORE = "b95288c"
SETTLE_SECONDS = 3.0
SECRET_ENV = "HANDRAISE_BENCH_WEBHOOK_SECRET"


def unpack(revision: str, into: Path) -> Path:
    """The `bot` and `core` packages of `revision`, as `git archive` gives them, under `into`."""
    repository = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(repository), "archive", revision, "bot", "core"], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


async def receiver() -> tuple[web.AppRunner, str, list[int]]:
    """A webhook receiver that takes every delivery with 204; returns its runner, URL and a count of deliveries."""
    received = [0]

    async def take(request: web.Request) -> web.Response:
        await request.read()
        received[0] += 1
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", take)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/hook", received


def token_of(process: subprocess.Popen[str]) -> str:
    """The inbox token in the banner a starting `serve` prints on stdout (as text, or as JSON lines)."""
    assert process.stdout is not None
    for line in process.stdout:
        if found := re.search(r"\?token=([\w-]+)", line):
            return found[1]
    raise RuntimeError("the server did not print its inbox URL")


async def connect(stack: AsyncExitStack, name: str, server: Server, token: str) -> Target:
    """A client for one server: its inbox's CSRF token read after a first question is delivered and answered."""
    http = await stack.enter_async_context(aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}))
    warm = Target(name, server, http, "")
    _, first = await warm.ask_many(1)
    await wait_delivered(http, server.base, first)
    async with http.get(f"{server.base}/") as page:
        found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
    assert found is not None, f"could not read {name}'s inbox CSRF token"
    target = Target(name, server, http, found[1])
    await target.answer_all(first)
    return target


async def measure(rounds: int, per_round: int, servers: dict[str, tuple[Server, str]]) -> None:
    async with AsyncExitStack() as stack:
        targets = [await connect(stack, name, server, token) for name, (server, token) in servers.items()]
        for target in targets:  # warm: imports, caches, the first -wal file
            _, ids = await target.ask_many(200)
            await wait_delivered(target.http, target.base, ids)
            await target.answer_all(ids)
        kinds = ("ask", "answer", "question")
        cpu: dict[tuple[str, str], list[float]] = {(t.name, kind): [] for t in targets for kind in kinds}
        rates: dict[tuple[str, str], list[float]] = {(t.name, kind): [] for t in targets for kind in kinds[:2]}
        print(f"{'round':>5}  {'server':<20} {'asks/s':>7} {'answers/s':>9}  CPU per ask, answer, question (µs)")
        for round_ in range(rounds):
            shift = round_ % len(targets)
            for target in targets[shift:] + targets[:shift]:
                pid = target.server.pid
                start = cpu_seconds(pid)
                asks, ids = await target.ask_many(per_round)
                await asyncio.sleep(0.5)  # an ask's CPU includes the delivery that runs after its 202
                asked = cpu_seconds(pid)
                await wait_delivered(target.http, target.base, ids)
                before_answers = cpu_seconds(pid)
                answers = await target.answer_all(ids)
                answered = cpu_seconds(pid)
                await asyncio.sleep(SETTLE_SECONDS)  # what the answers set off: webhook deliveries, logs
                settled = cpu_seconds(pid)
                spent = {
                    "ask": asked - start,
                    "answer": answered - before_answers,
                    "question": settled - before_answers + asked - start,
                }
                for kind, seconds in spent.items():
                    cpu[target.name, kind].append(seconds / per_round)
                rates[target.name, "ask"].append(asks)
                rates[target.name, "answer"].append(answers)
                each = ", ".join(f"{spent[kind] / per_round * 1e6:4.0f}" for kind in kinds)
                print(f"{round_ + 1:>5}  {target.name:<20} {asks:>7,.0f} {answers:>9,.0f}  {each}", flush=True)
        print()
        base = targets[0].name
        for target in targets:
            medians = {kind: statistics.median(cpu[target.name, kind]) for kind in kinds}
            line = ", ".join(f"{medians[kind] * 1e6:.0f}" for kind in kinds)
            asks = statistics.median(rates[target.name, "ask"])
            answers = statistics.median(rates[target.name, "answer"])
            print(f"median {target.name:<20} CPU per ask, answer, question {line} µs; {asks:,.0f} asks/s, ", end="")
            print(f"{answers:,.0f} answers/s")
            if target.name != base:
                change = ", ".join(
                    f"{kind} {(medians[kind] / statistics.median(cpu[base, kind]) - 1) * 100:+.1f} %" for kind in kinds
                )
                print(f"       against {base}: CPU per {change}")
                print(f"       paired by round: {paired(rates, cpu, target.name, base, rounds)}")


def paired(
    rates: dict[tuple[str, str], list[float]],
    cpu: dict[tuple[str, str], list[float]],
    name: str,
    base: str,
    rounds: int,
) -> str:
    """The medians of each round's own ratio against `base` (the two ran back to back in that round), with their
    quartiles: the machine's speed drifts over a run by more than the 5 % this benchmark is after, and a ratio taken
    within a round cancels most of that drift."""

    def summary(label: str, ratios: list[float]) -> str:
        low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
        return f"{label} x{statistics.median(ratios):.3f} (quartiles {low:.2f} to {high:.2f})"

    asks = [rates[name, "ask"][i] / rates[base, "ask"][i] for i in range(rounds)]
    answers = [rates[name, "answer"][i] / rates[base, "answer"][i] for i in range(rounds)]
    per_question = [cpu[name, "question"][i] / cpu[base, "question"][i] for i in range(rounds)]
    return ", ".join(
        (summary("asks/s", asks), summary("answers/s", answers), summary("CPU per question", per_question))
    )


def main() -> None:
    args = sys.argv[1:]
    revision = BEFORE
    if "--before" in args:
        at = args.index("--before")
        revision = args[at + 1]
        del args[at : at + 2]
    also: list[str] = []
    with_webhook = "--without-webhook" not in args
    if not with_webhook:
        args.remove("--without-webhook")
    while "--also" in args:
        at = args.index("--also")
        also.append(args[at + 1])
        del args[at : at + 2]
    rounds = int(args[0]) if len(args) > 0 else 6
    per_round = int(args[1]) if len(args) > 1 else 2000
    print(f"before: {revision}; after: the working tree; {rounds} rounds of {per_round} asks, then their answers")
    with tempfile.TemporaryDirectory() as tmp:
        code = unpack(revision, Path(tmp) / "code")
        others = {rev: unpack(rev, Path(tmp) / f"code-{rev}") for rev in also}

        async def run() -> None:
            hook, url, received = await receiver()
            cases = [("before", "", {"PYTHONPATH": str(code)}), ("after", "", {})]
            if with_webhook:
                webhook = f'log_format = "json"\n[[webhooks]]\nurl = "{url}"\nsecret_env = "{SECRET_ENV}"\n'
                cases.append(("after+json+webhook", webhook, {SECRET_ENV: "bench-secret"}))
            cases += [(rev, "", {"PYTHONPATH": str(path)}) for rev, path in others.items()]
            processes: list[subprocess.Popen[str]] = []
            try:
                servers: dict[str, tuple[Server, str]] = {}
                for name, extra, env in cases:
                    folder = Path(tmp) / name
                    folder.mkdir()
                    port = free_port()
                    server_table = f'[server]\nlisten = "127.0.0.1:{port}"\n'
                    store = f'[store]\npath = "{folder}/handraise.db"\n'
                    # `log_format` belongs to [server]; `[[webhooks]]` after every other table.
                    if extra:
                        log_line, _, webhooks = extra.partition("\n")
                        text = server_table + log_line + "\n" + store + webhooks
                    else:
                        text = server_table + store
                    (folder / "config.toml").write_text(text)
                    log = (folder / "serve.log").open("w")
                    process = start_serve(folder / "config.toml", cwd=str(folder), env=env, stderr=log)
                    processes.append(process)
                    token = token_of(process)
                    servers[name] = (Server(f"http://127.0.0.1:{port}", process.pid), token)
                await measure(rounds, per_round, servers)
                print(f"webhook deliveries received: {received[0]}")
            finally:
                for process in processes:
                    process.terminate()
                for process in processes:
                    process.wait(timeout=60)
                await hook.cleanup()

        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # every server runs from cached bytecode, as it would
        asyncio.run(run())


if __name__ == "__main__":
    main()
