"""Web Push for the inbox (`[web.push]`): new questions pushed to the devices of the signed-in people who may answer
them, standard and key-owned (RFC 8030 delivery, RFC 8291 encryption, RFC 8292 VAPID), and answered from the
notification's buttons with a one-time token.

Loaded only when `[web.push]` is on: its cryptography (py-vapid, http_ece) stays out of a serve that does not push.
The parts: `keys` (the VAPID key pair kept in the store), `encryption` (a payload for one device), `notification`
(what is pushed, pure), `subscription_body` (the browser's subscription, read and checked), `sender` (one push and its
retries), `fanout` (who gets a question), `routes` (the HTTP side) and `web_push` (the whole, as the inbox holds it).
A notification's answer token is the kit's (`bot.channels.tap_tokens`), spent once through `bot.channels.one_tap`.
"""
