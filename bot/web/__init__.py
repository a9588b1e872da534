"""The web inbox: the embedded default answerer, a local page where pending questions wait for a human.

The names load on first use, so that the registry (`bot.kinds`) only needs `bot.web.kind`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.channels.lazy_names import lazy_names

if TYPE_CHECKING:
    from bot.web.app import WebInbox as WebInbox

__all__ = ("WebInbox",)

__getattr__ = lazy_names(__name__, {"WebInbox": "bot.web.app"})
