"""The channel kit: what every channel shares (the outbound base, the reply half, the kind a channel describes itself
with, one place per agent in a chat), so that a new channel is one package plus one registry line."""
