"""The web inbox: the embedded default answerer, a local page where pending questions wait for a human.

The names load on first use, so that the registry (`bot.kinds`) only needs `bot.web.kind`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.web.app import WebInbox as WebInbox

__all__ = ("WebInbox",)


def __getattr__(name: str) -> Any:
    if name != "WebInbox":
        raise AttributeError(f"module 'bot.web' has no attribute {name!r}")
    return import_module("bot.web.app").WebInbox
