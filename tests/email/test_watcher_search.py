"""The IMAP watcher's reading of SEARCH responses and its catch-up loop, against a scripted IMAP client."""

from __future__ import annotations

from typing import Any

import pytest
from aioimaplib import Response

from bot.email.settings import ImapSettings
from bot.email.transport import ImapWatcher

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
    await watcher(handled).fetch_new(imap)  # type: ignore[arg-type]  # scripted stand-in for aioimaplib.IMAP4
    assert imap.fetched == [11]


async def test_catch_up_searches_again_until_nothing_new_arrives() -> None:
    handled: list[bytes] = []
    imap = ScriptedImap([[b"11 12"], [b"13"], []])
    found = watcher(handled)
    await found.fetch_new(imap)  # type: ignore[arg-type]
    assert imap.fetched == [11, 12, 13]
    assert found.last_uid == 13


class RecordingImap(ScriptedImap):
    """Also records the search criteria and answers NOOP, for the catch-up and poll paths."""

    def __init__(self, searches: list[list[bytes]]) -> None:
        super().__init__(searches)
        self.criteria: list[str] = []
        self.noops = 0

    async def uid_search(self, criteria: str, charset: Any = None) -> Response:
        self.criteria.append(criteria)
        return await super().uid_search(criteria, charset)

    async def noop(self) -> Response:
        self.noops += 1
        return Response("OK", [b"NOOP completed"])


def selected(validity: int, uid_next: int) -> Response:
    return Response("OK", [f"OK [UIDVALIDITY {validity}] UIDs valid".encode(), f"OK [UIDNEXT {uid_next}]".encode()])


async def test_after_a_reconnect_it_catches_up_from_the_last_uid_it_read() -> None:
    found = watcher([])
    found.uidvalidity = 7
    imap = RecordingImap([[b"11 12"], []])
    await found.catch_up(imap, selected(7, 13))  # type: ignore[arg-type]
    assert (imap.criteria[0], imap.fetched) == ("UID 11:*", [11, 12])


async def test_a_new_uidvalidity_reads_the_unseen_mail_instead_of_trusting_old_uids() -> None:
    found = watcher([])
    found.uidvalidity = 7
    imap = RecordingImap([[b"3 4"]])
    await found.catch_up(imap, selected(8, 5))  # type: ignore[arg-type]
    assert (imap.criteria, imap.fetched) == (["UNSEEN"], [3, 4])
    assert (found.uidvalidity, found.last_uid) == (8, 4)


async def test_without_idle_it_polls_and_stops_when_the_connection_is_lost() -> None:
    from datetime import timedelta

    import anyio

    from bot.email.transport import ImapError

    handled: list[bytes] = []
    found = watcher(handled)
    found.settings = found.settings.model_copy(update={"poll_interval": timedelta(milliseconds=10)})
    imap = RecordingImap([[], [b"11"], [], []])
    lost = anyio.Event()

    async def lose_after_the_reply() -> None:
        while imap.fetched != [11]:
            await anyio.sleep(0.005)
        lost.set()

    caught: list[ImapError] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(lose_after_the_reply)
            try:
                await found.poll(imap, lost)  # type: ignore[arg-type]
            except ImapError as error:
                caught.append(error)
    assert "lost" in str(caught[0])
    assert imap.noops >= 2 and handled == [b"hello"]
