"""The durable store: pending questions, their deliveries, answers and the audit log. `bot.store.interface` is what
the program sees; `sqlite` and `postgres` are the two backends, and `open` picks one for the config."""
