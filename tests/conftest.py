from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """The bot's libraries (aiohttp, slack-sdk, aiosmtplib, aioimaplib) are asyncio-only."""
    return "asyncio"
