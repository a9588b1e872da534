from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from playwright.async_api import Browser

from bot.channels.base import install_channel
from bot.kinds import KINDS
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from bot.store.sqlite.store import Store
from bot.web import WebInbox
from bot.web.settings import WebSettings
from core import Context
from tests.web.chromium import chromium_running
from tests.web.helpers import TOKEN, Client, make_context
from tests.web.oidc_provider import Provider, provider_running


@pytest.fixture
def anyio_backend() -> str:
    """aiohttp runs on asyncio only."""
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "handraise.db") as opened:
        yield opened


@pytest.fixture
def ledger(store: Store) -> Ledger:
    return Ledger(SqliteStore(store), SystemClock())


@pytest.fixture
def settings() -> WebSettings:
    return WebSettings()


@pytest.fixture
def inbox(ledger: Ledger, settings: WebSettings) -> WebInbox:
    return WebInbox(ledger, settings, token=TOKEN, titles=KINDS.titles)


@pytest.fixture
def ctx(inbox: WebInbox, ledger: Ledger, settings: WebSettings) -> Context:
    """A seam whose only answerer is the web inbox, routed as the config says."""
    ctx = make_context()
    install_channel(ctx, inbox, Router(["web"], {"web": settings.subscriptions}), ledger)
    return ctx


@pytest.fixture
async def anonymous(inbox: WebInbox) -> AsyncIterator[Client]:
    """A client of a server with the inbox mounted, not signed in."""
    app = web.Application()
    inbox.add_routes(app)
    async with TestClient(TestServer(app)) as client:
        yield client
        await inbox.close()


@pytest.fixture
async def client(anonymous: Client) -> Client:
    """The same client, signed in through the token link."""
    response = await anonymous.get(f"/?token={TOKEN}")
    assert response.status == 200
    return anonymous


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    """The suite's OpenID provider, on a free port."""
    async with provider_running() as started:
        yield started


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium for one test (skipped, or failed under CI, when Debian's package cannot be had)."""
    async with chromium_running() as launched:
        yield launched
