"""Several real `handraise serve` processes on one PostgreSQL database, as an operator runs them behind a load balancer.

Every replica reads the same config file (`listen = "127.0.0.1:0"`: each picks a free port and prints it), so what
one replica does differently from another comes from the database alone. Each process's stdout and stderr go to one
log file, read line by line as they come: a replica is ready once it has printed its inbox link and its /healthz
answers. Everything here is asynchronous, because the fake Slack Web API the replicas call runs in the test's own
event loop: a blocking call would stall it.

On a failure inside `replica_set`, the tail of every replica's log is printed (pytest shows it with the failure).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.text import TextReceiveStream

from bot.settings.tables import StoreSettings
from bot.web.auth import InboxAuth
from tests.slack.signing import event_body, signed_headers

URL_ENV = "HANDRAISE_DATABASE_URL"
START_SECONDS = 40
"""Generous: three Python processes importing the bot at once on a loaded 2-core machine."""
STOP_SECONDS = 20
LEASE_SECONDS = 2
"""A replica's lease in these tests (when the store has leases): a dead replica's questions move within seconds."""
BANNER = re.compile(r"handraise is serving (http://\S+)")
INBOX = re.compile(r"web inbox:\s+\S+\?token=(\S+)")


def store_table(tmp_path: Path, lease: float) -> str:
    """The `[store]` table every replica shares: PostgreSQL from the environment, and `lease` where leases exist."""
    lines = ["[store]", f'path = "{tmp_path / "unused.db"}"', f'url_env = "{URL_ENV}"']
    if "lease_seconds" in StoreSettings.model_fields:
        lines.append(f"lease_seconds = {lease:g}")
    return "\n".join(lines) + "\n"


@dataclass
class Replica:
    """One `handraise serve` process."""

    name: str
    process: Process
    log: Path
    lines: list[str] = field(default_factory=list)
    base: str = ""
    token: str = ""
    ready: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)

    @property
    def csrf(self) -> str:
        """The inbox form's CSRF token, derived from this replica's session token."""
        return InboxAuth(self.token).csrf

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def kill(self) -> None:
        """`kill -9`: no clean-up of any kind, as when a machine goes away."""
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> int:
        """SIGTERM, as a deploy stops it; returns its exit code."""
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STOP_SECONDS):
                return await self.process.wait()
            self.process.kill()
        return await self.process.wait()

    def tail(self, count: int = 60) -> str:
        return "".join(self.lines[-count:])


@dataclass
class ReplicaSet:
    """The replicas of one test, their shared config and an HTTP client."""

    config: Path
    env: dict[str, str]
    tmp_path: Path
    http: aiohttp.ClientSession
    tasks: TaskGroup
    replicas: list[Replica] = field(default_factory=list)

    def __getitem__(self, index: int) -> Replica:
        return self.replicas[index]

    async def start(self, *, wait: bool = True) -> Replica:
        """Start one more replica; with `wait`, return once it serves (raises with its log if it ends first)."""
        name = "abcdefgh"[len(self.replicas)]
        log = self.tmp_path / f"replica-{name}.log"
        process = await anyio.open_process(
            [sys.executable, "-m", "bot.cli", "serve", "--config", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.tmp_path,
        )
        replica = Replica(name, process, log)
        self.replicas.append(replica)
        self.tasks.start_soon(_read_log, replica)
        if wait:
            await self.until_ready(replica)
        return replica

    async def until_ready(self, replica: Replica) -> None:
        with anyio.fail_after(START_SECONDS):
            async with anyio.create_task_group() as race:

                async def ended() -> None:
                    await replica.ended.wait()
                    race.cancel_scope.cancel()

                race.start_soon(ended)
                await replica.ready.wait()
                race.cancel_scope.cancel()
        if not replica.ready.is_set():
            raise AssertionError(f"replica {replica.name} ended before serving:\n{replica.tail()}")
        async with self.http.get(f"{replica.base}/healthz") as health:
            assert health.status == 200, await health.text()

    # --- the API, as an agent uses it --------------------------------------------------------------------------

    async def ask(self, replica: Replica, question: str = "Deploy v2?", *, agent: str | None = None) -> str:
        """Ask on `replica`; the question's id."""
        body: dict[str, Any] = {"questions": [{"id": "go", "question": question, "options": OPTIONS}]}
        if agent is not None:
            body["agent"] = {"id": agent}
        async with self.http.post(f"{replica.base}/v1/questions", json=body) as reply:
            assert reply.status == 202, await reply.text()
            return str((await reply.json())["id"])

    async def poll(self, replica: Replica, question_id: str, wait: float = 0) -> tuple[int, dict[str, Any]]:
        """One `GET /v1/questions/{id}?wait=…` on `replica`: its status and body."""
        url = f"{replica.base}/v1/questions/{question_id}?wait={wait:g}"
        async with self.http.get(url, timeout=aiohttp.ClientTimeout(total=wait + 30)) as reply:
            return reply.status, json.loads(await reply.text())

    async def until_in_inbox(self, replica: Replica, question_id: str, seconds: float = 10) -> None:
        """Until `replica`'s inbox shows the question (its card is served), as a person would find it there.

        Delivery runs after the ask's 202, in the asking replica; no event reaches the test, so this asks every 20 ms.
        """
        url = f"{replica.base}/questions/{question_id}/card"
        headers = {"Authorization": f"Bearer {replica.token}"}
        with anyio.fail_after(seconds):
            while True:
                async with self.http.get(url, headers=headers) as card:
                    if card.status == 200:
                        return
                await anyio.sleep(0.02)

    async def answer_in_inbox(self, replica: Replica, question_id: str, option: int = 0) -> int:
        """Answer in `replica`'s web inbox as a person does (the form's POST); the HTTP status (303 = accepted)."""
        form = {"csrf": replica.csrf, "q0": str(option), "action": "send"}
        url = f"{replica.base}/questions/{question_id}/answer"
        headers = {"Authorization": f"Bearer {replica.token}"}
        async with self.http.post(url, data=form, headers=headers, allow_redirects=False) as reply:
            return reply.status

    async def slack_event(self, replica: Replica, payload: dict[str, Any], **headers: str) -> int:
        """A Slack event, signed as Slack signs it, posted to `replica`'s /slack/events; the HTTP status."""
        body = event_body(payload)
        url = f"{replica.base}/slack/events"
        async with self.http.post(url, data=body.encode(), headers=signed_headers(body) | headers) as reply:
            return reply.status


OPTIONS = [{"label": "Yes"}, {"label": "No"}]


async def _read_log(replica: Replica) -> None:
    """Copy the replica's output to its log file line by line, noticing its banner; until the process ends."""
    stream = replica.process.stdout
    assert stream is not None
    pending = ""
    with replica.log.open("w") as log:
        try:
            async for chunk in TextReceiveStream(stream, errors="replace"):
                pending += chunk
                *complete, pending = pending.split("\n")
                for line in complete:
                    replica.lines.append(line + "\n")
                    log.write(line + "\n")
                    if found := BANNER.search(line):
                        replica.base = found[1]
                    elif found := INBOX.search(line):
                        replica.token = found[1]
                        replica.ready.set()
                log.flush()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            if pending:
                replica.lines.append(pending)
                log.write(pending)
            await replica.process.wait()
            replica.ended.set()


def replica_env(database_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return os.environ | {URL_ENV: database_url, "PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": ""} | (extra or {})


@asynccontextmanager
async def replica_set(
    tmp_path: Path,
    database_url: str,
    count: int,
    *,
    config: str = "",
    env: dict[str, str] | None = None,
    lease: float = LEASE_SECONDS,
) -> AsyncIterator[ReplicaSet]:
    """`count` replicas on `database_url`, all serving; `config` is added to the shared config file (channels,
    subscriptions). On exit every live replica is stopped with SIGTERM."""
    path = tmp_path / "config.toml"
    path.write_text('[server]\nlisten = "127.0.0.1:0"\n' + store_table(tmp_path, lease) + config)
    async with aiohttp.ClientSession() as http, anyio.create_task_group() as tasks:
        group = ReplicaSet(path, replica_env(database_url, env), tmp_path, http, tasks)
        try:
            for _ in range(count):
                await group.start(wait=False)
            for replica in group.replicas:
                await group.until_ready(replica)
            yield group
        except BaseException:
            for replica in group.replicas:
                print(f"----- replica {replica.name} (exit {replica.process.returncode}) -----\n{replica.tail()}")
            raise
        finally:
            with anyio.CancelScope(shield=True):
                for replica in group.replicas:
                    await replica.stop()
                tasks.cancel_scope.cancel()
