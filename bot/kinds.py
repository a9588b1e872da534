"""The channels this handraise has: the one place that lists them. A new channel is one package plus one line here.

The order is the default waterfall order (when `bot.answerers` does not say otherwise).
"""

from __future__ import annotations

from bot.channels.kind import KindRegistry
from bot.discord.kind import DISCORD
from bot.email.kind import EMAIL
from bot.ntfy.kind import NTFY
from bot.slack.kind import SLACK
from bot.teams.kind import TEAMS
from bot.telegram.kind import TELEGRAM
from bot.web.kind import WEB

KINDS = KindRegistry(SLACK, TELEGRAM, TEAMS, DISCORD, NTFY, EMAIL, WEB)
