"""handraise's answerers (Slack, email, web inbox) and the program that runs them.

`bot.install(ctx, config)` puts the configured answerers on an existing `core.Context`.
"""

from bot.install import Installation as Installation
from bot.install import install as install

__all__ = ("Installation", "install")
