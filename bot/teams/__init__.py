"""The Microsoft Teams answerer: questions as Adaptive Cards in a channel, answered with a click or a thread reply.

Activities arrive on serve's `/teams/messages`, each token checked first (`auth`); cards go out through the Bot
Connector (`connector`). The registry (`bot.kinds`) only needs `bot.teams.kind`.
"""
