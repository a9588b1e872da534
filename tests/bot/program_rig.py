"""Start the real program (HTTP server, store, seam) with recording channels in place of Slack/email/web."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.config import Config, parse_config
from bot.program import Running, running
from bot.questions.clock import Clock

from .fakes import RecordingChannel


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_for(tmp_path: Path, extra: str = "", *, port: int = 0, environ: dict[str, str] | None = None) -> Config:
    text = f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp_path / "handraise.db"}"\n{extra}'
    return parse_config(text, environ=environ or {})


@asynccontextmanager
async def program(
    config: Config, *, clock: Clock | None = None, names: tuple[str, ...] = ("web",)
) -> AsyncIterator[tuple[Running, dict[str, RecordingChannel]]]:
    channels = {name: RecordingChannel(name) for name in names}
    async with running(config, clock=clock, channels=list(channels.values())) as started:
        yield started, channels
