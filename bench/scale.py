"""10,000 concurrently pending questions in one `handraise serve` process, then all answered through the web inbox.

Run: `uv run python bench/scale.py [COUNT] [--agent]`. Starts a real server in a subprocess (web inbox only, a fresh
SQLite store), asks COUNT questions over the HTTP API, reads the server's resident memory, then answers every question
by POSTing the inbox's answer form. Prints RSS per pending question and answers per second. With `--agent`, each
question comes from its own agent (an id, a name and a label), as agents ask in practice; with `--detail-kib N`, each
carries N KiB of detail (a large plan to review), to see what one large question costs.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import tempfile
from pathlib import Path

import aiohttp
from serving import free_port, in_parallel, inbox_token, start_serve

CONCURRENCY = 32


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match[1])


async def run(count: int, server: subprocess.Popen[str], base: str, token: str, *, agent: bool, detail: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        ids: list[str] = [""] * (count + 1)

        async def ask(index: int) -> None:
            body: dict[str, object] = {
                "questions": [{"id": "go", "question": f"Deploy build {index}?", "options": [{"label": "Yes"}]}]
            }
            if detail:
                body["questions"][0]["detail"] = f"{index} " + "x" * (detail * 1024)  # type: ignore[index]
            if agent:
                body["agent"] = {"id": f"deploy-{index}", "name": f"deploy bot {index}", "labels": {"team": "ops"}}
            async with http.post(f"{base}/v1/questions", json=body) as reply:
                assert reply.status == 202, await reply.text()
                ids[index] = (await reply.json())["id"]

        await ask(0)  # one question first, so the inbox shows a form to read its CSRF token from
        async with http.get(f"{base}/") as page:
            csrf = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert csrf is not None, "could not read the inbox's CSRF token"
        await asyncio.sleep(0.5)
        baseline = rss_kib(server.pid)
        asked = await in_parallel(count, lambda index: ask(index + 1), CONCURRENCY)
        while True:
            async with http.get(f"{base}/healthz") as health:
                if (await health.json())["pending"] == count + 1:
                    break
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)
        pending_rss = rss_kib(server.pid)

        async def answer(index: int) -> None:
            form = {"csrf": csrf[1], "q0": "0", "action": "send"}
            url = f"{base}/questions/{ids[index]}/answer"
            async with http.post(url, data=form, allow_redirects=False) as reply:
                assert reply.status in (200, 303), (reply.status, await reply.text())

        answered = await in_parallel(count + 1, answer, CONCURRENCY)
        async with http.get(f"{base}/healthz") as health:
            left = (await health.json())["pending"]
        peak = rss_kib(server.pid, "VmHWM")
    per_question = (pending_rss - baseline) * 1024 / count
    each = [*(["from its own agent"] if agent else []), *([f"with {detail:,} KiB of detail"] if detail else [])]
    described = f"  (each {' and '.join(each)})" if each else ""
    print(f"questions                  {count:>10,}{described}")
    print(f"asked over the API         {count / asked:>10,.0f} asks/s")
    rss = f"{baseline / 1024:.1f} MiB / {pending_rss / 1024:.1f} MiB (peak {peak / 1024:.1f})"
    print(f"server RSS before / with   {rss}")
    print(f"RSS per pending question   {per_question / 1024:>10.2f} KiB")
    print(f"answered in the web inbox  {count / answered:>10,.0f} answers/s   ({left} still pending)")


def main() -> None:
    parser = argparse.ArgumentParser(description="Many pending questions in one handraise serve process.")
    parser.add_argument("count", nargs="?", type=int, default=10_000, help="questions pending at once")
    parser.add_argument("--agent", action="store_true", help="each question from its own agent")
    parser.add_argument("--detail-kib", type=int, default=0, help="KiB of detail in each question")
    options = parser.parse_args()
    count: int = options.count
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp}/scale.db"\n')
        server = start_serve(config)
        try:
            token = inbox_token(server)
            asyncio.run(
                run(count, server, f"http://127.0.0.1:{port}", token, agent=options.agent, detail=options.detail_kib)
            )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
