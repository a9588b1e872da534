"""handraise's answerers (Slack, email, web inbox) and the program that runs them.

`bot.install(ctx, config)` puts the configured answerers on an existing `core.Context`.

The names are loaded on first use: `handraise claude-hook` and `handraise ask` import this package on every call and
must start fast, without the channels' libraries (aiohttp, slack-bolt) that `install` brings in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.installation import Installation as Installation
    from bot.installation import install as install

__all__ = ("Installation", "install")


def __getattr__(name: str) -> Any:
    if name in __all__:
        from bot import installation

        value = getattr(installation, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bot' has no attribute {name!r}")
