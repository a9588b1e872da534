"""The IMAP watcher's reading of SEARCH responses and its catch-up loop, against a scripted IMAP client."""

from __future__ import annotations

from typing import Any

import pytest
from aioimaplib import Response

from bot.email.transport import ImapWatcher
from bot.settings import ImapSettings

pytestmark = pytest.mark.anyio


class ScriptedImap:
    """Answers UID SEARCH from a script; FETCH returns a tiny message for every UID it is asked for."""

    def __init__(self, searches: list[list[bytes]]) -> None:
        self.searches = searches
        self.fetched: list[int] = []

    async def uid_search(self, criteria: str, charset: Any = None) -> Response:
        lines = self.searches.pop(0) if self.searches else []
        return Response("OK", [*lines, b"SEARCH completed"])

    async def uid(self, command: str, uid: str, *args: str) -> Response:
        if command == "fetch":
            self.fetched.append(int(uid))
            return Response("OK", [f"1 FETCH (UID {uid} BODY[] {{5}}".encode(), bytearray(b"hello"), b")", b"ok"])
        return Response("OK", [b"ok"])


def watcher(handled: list[bytes]) -> ImapWatcher:
    async def handle(raw: bytes) -> bool:
        handled.append(raw)
        return False

    settings = ImapSettings(host="127.0.0.1", username="bot", password_env="IMAP_PASSWORD")
    found = ImapWatcher(settings, "secret", handle)
    found.last_uid = 10
    return found


async def test_other_untagged_lines_in_a_search_response_are_not_uids() -> None:
    handled: list[bytes] = []
    imap = ScriptedImap([[b"11", b"15 EXISTS", b"3 RECENT"], []])
    await watcher(handled)._fetch_new(imap)  # type: ignore[arg-type]  # scripted stand-in for aioimaplib.IMAP4
    assert imap.fetched == [11]


async def test_catch_up_searches_again_until_nothing_new_arrives() -> None:
    handled: list[bytes] = []
    imap = ScriptedImap([[b"11 12"], [b"13"], []])
    found = watcher(handled)
    await found._fetch_new(imap)  # type: ignore[arg-type]
    assert imap.fetched == [11, 12, 13]
    assert found.last_uid == 13
