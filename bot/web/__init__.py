"""The web inbox: the embedded default answerer, a local page where pending questions wait for a human."""

from bot.web.app import WebInbox as WebInbox
from bot.web.channel import WebChannel as WebChannel

__all__ = ("WebChannel", "WebInbox")
