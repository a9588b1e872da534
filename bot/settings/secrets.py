"""Secrets come from the environment, never from the config file: reading one, and saying what to do when it is
missing."""

from __future__ import annotations

import os
from collections.abc import Mapping

from bot.settings.errors import ConfigError


def resolve_secret(env_name: str, environ: Mapping[str, str] | None = None) -> str:
    """The secret in environment variable `env_name`; raises ConfigError when it is unset or empty."""
    env = os.environ if environ is None else environ
    if problem := env_problem(env_name, env, noun="secret"):
        raise ConfigError(problem)
    return env[env_name]


def env_problem(name: str, environ: Mapping[str, str], *, noun: str) -> str | None:
    """What is wrong with environment variable `name` (unset, or empty), said for a person; None when it is set."""
    value = environ.get(name)
    if value is None:
        return f"environment variable {name} is not set; export it (the {noun} itself never goes in the file)"
    if not value.strip():
        return f"environment variable {name} is empty; export the {noun} in it"
    return None
