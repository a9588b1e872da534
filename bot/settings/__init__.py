"""The configuration's shape, below everything that reads it: the TOML tables as pydantic models, durations, and
secrets read from the environment."""
