from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from .servers import Dovecot, SmtpToDovecot, need_dovecot

_mailboxes = itertools.count(1)


@pytest.fixture(scope="session")
def dovecot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dovecot]:
    server = Dovecot(need_dovecot(), tmp_path_factory.mktemp("dovecot"))
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def own_dovecot(tmp_path: Path) -> Iterator[Dovecot]:
    """A Dovecot of this test's own, for tests that stop and restart it."""
    server = Dovecot(need_dovecot(), tmp_path / "dovecot")
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def smtp(dovecot: Dovecot) -> Iterator[SmtpToDovecot]:
    server = SmtpToDovecot(dovecot)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mailbox_number() -> int:
    """A number of this test's own, so that its mailboxes on the shared Dovecot are its own."""
    return next(_mailboxes)
