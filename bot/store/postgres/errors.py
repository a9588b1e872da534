"""Turning what psycopg and libpq say about a PostgreSQL store into handraise's errors, with what to do next.

Connection failures are StoreUnavailable (the same call may work once the server is back); handraise's own mistakes
stay StoreError. Messages name the database as `PostgreSQL at host:port/dbname` and never carry the password.
"""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from bot.store.errors import StoreError, StoreUnavailable


def describe(url: str) -> str:
    """`PostgreSQL at host:port/dbname` for a URL, without its user or password. Raises StoreError for garbage."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        raise StoreError("the database URL is not a valid postgresql:// URL; see the README's store section") from None
    host = str(parts.get("host") or "localhost")
    port = str(parts.get("port") or 5432)
    dbname = str(parts.get("dbname") or parts.get("user") or "")
    return f"PostgreSQL at {host}:{port}/{dbname}"


def scrub(text: str, secret: str) -> str:
    """One line of the server's or libpq's words, never the password (should a message ever echo it)."""
    line = " ".join(text.split())
    return line.replace(secret, "***") if secret else line


def unreachable(target: str, error: psycopg.Error, secret: str) -> str:
    reason = scrub(str(error), secret)
    lowered = reason.lower()
    if "authentication" in lowered or ("role" in lowered and "does not exist" in lowered):
        hint = "check the user and password in the database URL"
    elif "database" in lowered and "does not exist" in lowered:
        hint = "create the database (createdb) or fix its name in the database URL"
    else:
        hint = "check that PostgreSQL is running and that the URL's host and port are right"
    return f"cannot connect to the handraise store, {target} ({reason}); {hint}"


def failure(target: str, error: psycopg.Error, secret: str) -> StoreError:
    reason = scrub(str(error), secret)
    if isinstance(error, psycopg.errors.ProgramLimitExceeded):
        return StoreError(f"the handraise store at {target} refused a value as too long ({reason}); nothing was saved")
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(
            f"the handraise store at {target} is unavailable ({reason}); nothing was recorded. "
            "Check that PostgreSQL is running and reachable: handraise carries on once it is"
        )
    return StoreError(f"the handraise store at {target} failed: {reason}")
