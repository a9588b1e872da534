"""`serve` with `[web.push]` and sign-in, against the local OpenID provider and the local push service; people sign
in with an aiohttp client holding a cookie jar, as a browser would, and subscribe their devices as the page does."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.config import parse_config
from bot.program import Running, running
from bot.store.open import open_store
from bot.web.push.web_push import WebPush
from tests.web.oidc_provider import CLIENT_SECRET, Provider
from tests.web.push.push_service import Device

ENVIRON = {"HANDRAISE_OIDC_SECRET": "", "HANDRAISE_SESSION_SECRET": "one secret for every replica"}


def config_text(provider: Provider, db: Path, extra: str = "", *, on_postgres: bool = False) -> str:
    postgres = 'url_env = "HANDRAISE_PUSH_PG"' if on_postgres else ""
    return f"""
[server]
listen = "127.0.0.1:0"
[store]
path = "{db}"
{postgres}
[web]
session_secret_env = "HANDRAISE_SESSION_SECRET"
{extra}
[web.push]
subject = "mailto:ops@example.org"
[web.sign_in]
issuer = "{provider.issuer}"
client_id = "handraise-inbox"
client_secret_env = "HANDRAISE_OIDC_SECRET"
allowed = ["@example.org", "bob@other.org"]
"""


@asynccontextmanager
async def serving(
    provider: Provider, db: Path, extra: str = "", *, postgres_url: str | None = None
) -> AsyncIterator[Running]:
    """`serve` on the SQLite store `db`, or on PostgreSQL at `postgres_url` (a replica)."""
    environ = ENVIRON | {"HANDRAISE_OIDC_SECRET": CLIENT_SECRET}
    if postgres_url is not None:
        environ |= {"HANDRAISE_PUSH_PG": postgres_url}
    config = parse_config(config_text(provider, db, extra, on_postgres=postgres_url is not None), environ=environ)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in environ.items():
            patch.setenv(key, value)
        store = await open_store(config, environ) if postgres_url is not None else None
        try:
            async with running(config, store=store) as program:
                yield program
        finally:
            if store is not None:
                await store.close()


def push_of(program: Running) -> WebPush:
    inbox: Any = program.installation.channels[0]
    assert inbox.push is not None
    return inbox.push


@dataclass
class Person:
    """A signed-in browser: its session, and the CSRF token its inbox page carries."""

    email: str
    session: aiohttp.ClientSession
    base_url: str
    csrf: str

    @property
    def headers(self) -> dict[str, str]:
        return {"X-CSRF-Token": self.csrf, "Origin": self.base_url}

    async def subscribe(self, device: Device | dict[str, Any]) -> int:
        body = device.to_json() if isinstance(device, Device) else device
        async with self.session.post(self.base_url + "/push/subscriptions", json=body, headers=self.headers) as reply:
            return reply.status


@asynccontextmanager
async def signed_in(program: Running, provider: Provider, email: str) -> AsyncIterator[Person]:
    provider.person = email
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(program.base_url + "/") as inbox:
            assert inbox.status == 200, await inbox.text()
            page = await inbox.text()
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        assert found is not None
        yield Person(email, session, program.base_url, found[1])


async def ask(program: Running, question: dict[str, Any], agent: str | None = None) -> str:
    """Ask through the agents' API; the question's id."""
    body: dict[str, Any] = {"questions": [question]} | ({"agent": {"id": agent}} if agent else {})
    async with aiohttp.ClientSession() as client, client.post(program.base_url + "/v1/questions", json=body) as asked:
        assert asked.status in (200, 201, 202), await asked.text()
        return str((await asked.json())["id"])


async def outcome(program: Running, question_id: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as client, client.get(f"{program.base_url}/v1/questions/{question_id}") as got:
        return await got.json()


async def tap(program: Running, question_id: str, token: str, action: str = "o0") -> tuple[int, dict[str, Any]]:
    """What the service worker does on a button: no cookie, the token as the credential."""
    url = f"{program.base_url}/push/answer/{question_id}"
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as worker, worker.post(url, json={"action": action}, headers=headers) as reply:
        return reply.status, await reply.json()


async def settled(program: Running) -> None:
    with anyio.fail_after(30):
        await push_of(program).settled()


CHOICE = {"id": "env", "question": "Deploy to which environment?", "options": [{"label": "staging"}, {"label": "prod"}]}
