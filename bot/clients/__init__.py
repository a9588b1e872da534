"""Talking to a running `handraise serve` from another process: the blocking HTTP client, `handraise ask`, and the
agent client for Python."""
