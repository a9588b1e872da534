"""`POST /v1/notes`: a status note is routed as the agent's questions are, shown by the channels that take them, held
back when it repeats within 10 s, and refused in the API's error shape when it is garbage; nothing is stored."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.api.notes import NoteThrottle
from bot.config import Config
from bot.program import running
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.store.records import AgentRef
from tests.fake_clock import FakeClock

from .fakes import RecordingChannel
from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

AGENT = {"id": "claude-s1", "name": "billing-api", "labels": {"tool": "claude", "project": "billing-api"}}
JSON = {"Content-Type": "application/json"}
NOTE = {"agent": AGENT, "event": "finished", "text": "All tests pass."}
ONLY_BILLING = '[[web.subscriptions]]\nlabels = { project = "billing-api" }\n'


class NoteRecorder(RecordingChannel):
    """A channel that shows notes, recording them with their route."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.notes: list[tuple[StatusNote, Route]] = []

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        self.notes.append((note, route))
        return True


@asynccontextmanager
async def running_with(
    tmp_path: Path, channel: RecordingChannel, extra: str = "", *, config: Config | None = None
) -> AsyncIterator[str]:
    """The program with `channel` as its one answerer (routed as `[web]` in `extra` says); yields its URL."""
    async with running(config or config_for(tmp_path, extra), channels=[channel]) as started:
        yield started.base_url


async def post(url: str, body: Any = None, *, data: bytes | None = None) -> tuple[int, dict[str, Any]]:
    """POST `body` as JSON, or the raw `data` (streamed: aiohttp warns about large bytes bodies)."""
    sent: dict[str, Any] = {"json": body} if data is None else {"data": io.BytesIO(data), "headers": JSON}
    async with aiohttp.ClientSession() as session, session.post(f"{url}/v1/notes", **sent) as response:
        return response.status, await response.json()


async def test_a_note_is_shown_by_the_channel_that_takes_the_agents_questions(tmp_path: Path) -> None:
    recorder = NoteRecorder("web")
    async with running_with(tmp_path, recorder, ONLY_BILLING) as url:
        status, body = await post(url, NOTE)
    assert (status, body) == (202, {"delivered": ["web"]})
    ((note, route),) = recorder.notes
    assert note.headline == "billing-api: finished" and note.detail == "All tests pass."
    assert route.index == 0


async def test_a_note_from_an_agent_no_channel_takes_is_shown_nowhere(tmp_path: Path) -> None:
    recorder = NoteRecorder("web")
    other = NOTE | {"agent": AGENT | {"labels": {"project": "elsewhere"}}}
    async with running_with(tmp_path, recorder, ONLY_BILLING) as url:
        status, body = await post(url, other)
    assert (status, body) == (202, {"delivered": []})
    assert recorder.notes == []


async def test_a_channel_that_shows_no_notes_is_left_out(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (started, channels):
        status, body = await post(started.base_url, NOTE)
        stored = await started.installation.store.list_questions()
        audit = await started.installation.store.history()
    assert (status, body) == (202, {"delivered": []})
    assert channels["web"].delivered == []
    assert (stored, audit) == ([], [])


async def test_the_same_note_within_ten_seconds_is_held_back(tmp_path: Path) -> None:
    recorder = NoteRecorder("web")
    async with running_with(tmp_path, recorder) as url:
        first = await post(url, NOTE)
        again = await post(url, NOTE)
        waiting = await post(url, NOTE | {"event": "waiting"})
        another_agent = await post(url, NOTE | {"agent": AGENT | {"id": "claude-s2"}})
    assert first == (202, {"delivered": ["web"]})
    assert again == (202, {"delivered": [], "throttled": True})
    assert waiting == (202, {"delivered": ["web"]})
    assert another_agent == (202, {"delivered": ["web"]})
    assert [(note.agent.id, note.event) for note, _ in recorder.notes] == [
        ("claude-s1", "finished"),
        ("claude-s1", "waiting"),
        ("claude-s2", "finished"),
    ]


async def test_the_throttle_lets_the_note_through_again_after_the_interval() -> None:
    clock = FakeClock()
    throttle = NoteThrottle(clock, timedelta(seconds=10))
    assert throttle.allow("a", "finished")
    await clock.advance(timedelta(seconds=9.9))
    assert not throttle.allow("a", "finished")
    await clock.advance(timedelta(seconds=0.2))
    assert throttle.allow("a", "finished")


async def test_unknown_fields_of_the_agent_are_ignored_as_for_a_question(tmp_path: Path) -> None:
    recorder = NoteRecorder("web")
    async with running_with(tmp_path, recorder) as url:
        status, body = await post(url, NOTE | {"agent": AGENT | {"model": "opus", "pid": 4242}})
    assert (status, body) == (202, {"delivered": ["web"]})
    assert recorder.notes[0][0].agent == AgentRef.model_validate(AGENT)


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"agent": AGENT}, 422, "BAD_REQUEST", "event"),
        (NOTE | {"event": "exploded"}, 422, "BAD_REQUEST", "event"),
        ({"event": "finished"}, 422, "BAD_REQUEST", "agent"),
        (NOTE | {"agent": {"name": "no id"}}, 422, "BAD_REQUEST", "agent.id"),
        (NOTE | {"agent": {"id": "  "}}, 422, "BAD_REQUEST", "agent.id"),
        (NOTE | {"agent": AGENT | {"labels": ["project", "billing-api"]}}, 422, "BAD_REQUEST", "agent.labels"),
        (NOTE | {"agent": AGENT | {"labels": {"project": 7}}}, 422, "BAD_REQUEST", "agent.labels.project"),
        (NOTE | {"agent": AGENT | {"name": "x" * 201}}, 422, "BAD_REQUEST", "agent.name"),
        (NOTE | {"text": "x" * 4_001}, 422, "BAD_REQUEST", "text"),
        (NOTE | {"text": "ring \x07 the bell"}, 422, "BAD_REQUEST", "text"),
        (NOTE | {"text": ["a", "list"]}, 422, "BAD_REQUEST", "text"),
        (NOTE | {"questions": []}, 422, "BAD_REQUEST", "questions"),
        (["a", "list"], 422, "BAD_REQUEST", "body"),
        ("finished", 422, "BAD_REQUEST", "body"),
    ],
)
async def test_garbage_is_refused_in_the_apis_error_shape(
    tmp_path: Path, body: Any, status: int, code: str, field: str
) -> None:
    recorder = NoteRecorder("web")
    async with running_with(tmp_path, recorder) as url:
        answer = await post(url, body)
    assert answer[0] == status
    assert answer[1]["error"]["code"] == code and answer[1]["error"]["message"].startswith(field)
    assert recorder.notes == []


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (b"{not json", 400, "BAD_JSON"),
        (b"\xff\xfe", 400, "BAD_JSON"),
        (b"[" * 100 + b"]" * 100, 400, "BAD_JSON"),
        (b'{"agent": {"id": "a"}, "event": "finished", "text": "' + b"x" * (1024 * 1024) + b'"}', 413, "TOO_LARGE"),
    ],
)
async def test_a_body_that_is_not_json_or_too_big_is_refused(
    tmp_path: Path, data: bytes, status: int, code: str
) -> None:
    recorder = NoteRecorder("web")
    async with running_with(tmp_path, recorder) as url:
        answer = await post(url, data=data)
    assert (answer[0], answer[1]["error"]["code"]) == (status, code)
    assert recorder.notes == []


async def test_notes_need_the_api_token_like_questions(tmp_path: Path) -> None:
    recorder = NoteRecorder("web")
    config = config_for(tmp_path)
    config = config.model_copy(update={"server": config.server.model_copy(update={"api_token_env": "NOTE_TOKEN"})})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NOTE_TOKEN", "s3cret")
        async with running_with(tmp_path, recorder, config=config) as url, aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/notes", json=NOTE) as refused:
                assert refused.status == 401
            headers = {"Authorization": "Bearer s3cret"}
            async with session.post(f"{url}/v1/notes", json=NOTE, headers=headers) as taken:
                assert (taken.status, await taken.json()) == (202, {"delivered": ["web"]})
