from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.program import Running
from bot.web.push import sender
from tests.web.oidc_provider import Provider
from tests.web.push.push_service import PushService, push_service_running
from tests.web.push.rig import Person, serving, signed_in


@pytest.fixture
async def push_service() -> AsyncIterator[PushService]:
    async with push_service_running() as started:
        yield started


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries a few hundredths of a second apart and given up within two seconds: the same rules, sooner."""
    monkeypatch.setattr(sender, "FIRST_BACKOFF_SECONDS", 0.05)
    monkeypatch.setattr(sender, "MAX_BACKOFF_SECONDS", 0.2)
    monkeypatch.setattr(sender, "DEADLINE_SECONDS", 2.0)


@pytest.fixture
async def program(provider: Provider, tmp_path: Path) -> AsyncIterator[Running]:
    async with serving(provider, tmp_path / "a.db") as started:
        yield started


@pytest.fixture
async def alice(program: Running, provider: Provider) -> AsyncIterator[Person]:
    async with signed_in(program, provider, "alice@example.org") as person:
        yield person
