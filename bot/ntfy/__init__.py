"""The ntfy answerer: each question is published once to an ntfy topic, with its options as tappable actions that
answer it from the phone's lock screen.

The registry (`bot.kinds`) only needs `bot.ntfy.kind`; the channel itself (`bot.ntfy.channel`) loads when ntfy runs.
"""
