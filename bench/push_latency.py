"""Question-to-push latency: from an agent's `POST /v1/questions` leaving the client to the encrypted push reaching
the push service, through a real `serve` with `[web.push]` and sign-in.

Run: `uv run python bench/push_latency.py [asks] [devices]` (default 300 asks, 1 device). Everything is on loopback
in one process: the local OpenID provider and RFC 8030 push service of the tests (tests/web/oidc_provider.py,
tests/web/push/push_service.py), `serve`'s program, and one signed-in person with `devices` subscribed devices. Asks
go one at a time; each sample runs from the API request being sent to the last device's push entering the push
service's handler (stamped before it checks the VAPID JWT and decrypts, which is the push service's own work). It
includes the ask's commit, the fan-out's queue, who may answer (the device list read from the store), the answer
token, the RFC 8291 encryption for each device, the VAPID header (a signed JWT reused per origin for an hour) and the
POSTs.

Beside it, in the same run and interleaved: a bare aiohttp POST of a body of the same size to the same push service
(a handler that only stamps and answers 201), from the client's send to the handler: the floor of one loopback POST.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import anyio
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.config import parse_config
from bot.program import running
from tests.web.oidc_provider import CLIENT_SECRET, provider_running
from tests.web.push.push_service import PushService
from tests.web.push.rig import config_text, signed_in

QUESTION = {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}


def report(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered) * 1000
    p90 = ordered[int(len(ordered) * 0.9)] * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    return f"{label:<52} p50 {p50:6.2f} ms   p90 {p90:6.2f} ms   p99 {p99:6.2f} ms"


async def main(asks: int, devices: int) -> None:
    service = PushService()
    arrived: list[float] = []
    stamped = anyio.Event()

    async def receive(request: web.Request) -> web.StreamResponse:
        arrived.append(time.perf_counter())
        answer = await service.receive(request)
        if len(arrived) >= devices:
            stamped.set()
        return answer

    async def bare(request: web.Request) -> web.StreamResponse:
        arrived.append(time.perf_counter())
        await request.read()
        return web.Response(status=201)

    app = web.Application()
    app.router.add_post("/push/{device}", receive)
    app.router.add_post("/bare", bare)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    service.origin = str(server.make_url("")).rstrip("/")
    directory = tempfile.TemporaryDirectory()
    environ = {"HANDRAISE_OIDC_SECRET": CLIENT_SECRET, "HANDRAISE_SESSION_SECRET": "bench"}
    os.environ.update(environ)  # serve reads the secrets from the environment too
    async with provider_running() as provider:
        config = parse_config(config_text(provider, Path(directory.name) / "bench.db"), environ=environ)
        async with running(config) as program, signed_in(program, provider, "alice@example.org") as alice:
            phones = [service.device() for _ in range(devices)]
            for phone in phones:
                assert await alice.subscribe(phone) == 201
            ours: list[float] = []
            floor: list[float] = []
            body = b""
            async with aiohttp.ClientSession() as agent:
                warmup = 20
                for round_ in range(warmup + asks):
                    arrived.clear()
                    stamped = anyio.Event()
                    payload = {"questions": [QUESTION | {"id": f"q{round_}"}]}
                    sent = time.perf_counter()
                    async with agent.post(program.base_url + "/v1/questions", json=payload) as asked:
                        assert asked.status in (200, 201, 202), await asked.text()
                    with anyio.fail_after(30):
                        await stamped.wait()
                    sample = max(arrived) - sent
                    body = body or b"x" * service.pushes_to(phones[0])[-1].size

                    arrived.clear()
                    sent = time.perf_counter()
                    async with agent.post(service.origin + "/bare", data=body) as answered:
                        assert answered.status == 201
                    if round_ >= warmup:
                        ours.append(sample)
                        floor.append(arrived[0] - sent)
            assert service.problems == [], service.problems
            assert all(len(service.pushes_to(phone)) == warmup + asks for phone in phones)
    await server.close()
    directory.cleanup()
    print(f"{asks} asks, one at a time, one process, loopback; {devices} device(s); push body {len(body)} bytes")
    print(report("bare aiohttp POST of the same size (floor)", floor))
    print(report(f"ask → push to the last of {devices} device(s) (handraise)", ours))


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
