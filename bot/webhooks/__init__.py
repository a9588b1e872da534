"""Webhooks: each ask or resolution a `[[webhooks]]` table wants, POSTed to it signed (HMAC-SHA256, as Stripe and
GitHub sign theirs), durably: queued by the store with the event itself, retried with backoff for a day, resumed
after a restart, and sent by one replica (`bot.store.webhook_queue`). The signing and the body are pure
(`signing.py`); the sender is the only part on the network (`sender.py`)."""
