"""The Discord answerer: questions in one public thread per agent, answered with buttons, selects, modals or a
thread reply. Interactions arrive over the Gateway, so no public endpoint is needed.

The registry (`bot.kinds`) only needs `bot.discord.kind`; the channel itself (`bot.discord.channel`) loads when
Discord runs.
"""
