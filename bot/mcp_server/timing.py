"""How long an MCP tool call waits and how often it reports progress: apart from the tools so the program can hold
one without importing the MCP SDK (which `serve` loads only when /mcp is first used)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """How long a call waits by default and how often it reports progress (small in tests)."""

    default_wait: float = 50.0
    progress_every: float = 15.0
