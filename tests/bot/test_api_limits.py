"""Hostile bodies over real HTTP: oversize with or without a length, chunked, deeply nested, NULs, duplicates."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}


async def post(url: str, data: Any, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.post(url, data=data, headers=headers or JSON) as response:
        return response.status, response.content_type, await response.json(content_type=None)


def oversize_question(size: int) -> bytes:
    return b'{"questions": [{"id": "a", "question": "' + b"x" * size + b'"}]}'


async def in_chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 64 * 1024):
        yield body[start : start + 64 * 1024]


async def test_a_chunked_body_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    # 1.5 MiB: under the server's 2 MiB read limit, which is what let a chunked body through before.
    async with program(config_for(tmp_path)) as (running, _):
        status, kind, body = await post(f"{running.base_url}/v1/questions", in_chunks(oversize_question(1_500_000)))
        assert await running.installation.store.count_questions() == 0
    assert (status, kind, body["error"]["code"]) == (413, "application/json", "TOO_LARGE")


async def test_a_valid_body_sent_in_small_chunks_is_read_whole(tmp_path: Path) -> None:
    # 240 kB: four chunks of 64 KiB, each a separate read on the server.
    questions = [{"id": f"q{index}", "question": "Deploy?", "detail": f"{index}" * 60_000} for index in range(4)]
    raw = json.dumps({"questions": questions}).encode()
    async with program(config_for(tmp_path)) as (running, _):
        status, _, body = await post(f"{running.base_url}/v1/questions", in_chunks(raw))
        record = await running.installation.store.get_question(body["id"])
    assert status == 202
    assert record is not None
    assert [question.detail for question in record.questions] == [question["detail"] for question in questions]


async def test_a_declared_length_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        status, _, body = await post(f"{running.base_url}/v1/questions", io.BytesIO(oversize_question(1_500_000)))
    assert (status, body["error"]["code"]) == (413, "TOO_LARGE")
    assert "1,500,0" in body["error"]["message"]


async def test_deeply_nested_json_is_a_400_not_a_500(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        deep = b'{"questions": [{"id": "a", "question": "b", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}]}"
        status, _, body = await post(f"{running.base_url}/v1/questions", io.BytesIO(deep))
    assert (status, body["error"]["code"]) == (400, "BAD_JSON")


async def test_a_nul_in_a_question_is_refused_naming_the_field(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        raw = b'{"questions": [{"id": "a", "question": "Deploy\\u0000?"}]}'
        status, _, body = await post(f"{running.base_url}/v1/questions", raw)
        assert await running.installation.store.count_questions() == 0
    assert (status, body["error"]["code"]) == (422, "BAD_REQUEST")
    assert body["error"]["message"].startswith("questions[0].question: contains the control character U+0000")
    assert channels["web"].delivered == []


async def test_duplicate_question_ids_are_refused_before_anything_is_stored(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        raw = b'{"questions": [{"id": "q1", "question": "A?"}, {"id": "q1", "question": "B?"}]}'
        status, _, body = await post(f"{running.base_url}/v1/questions", raw)
        assert await running.installation.store.count_questions() == 0
    assert (status, body["error"]["message"]) == (
        422,
        'questions[1].id: duplicate id "q1" (as questions[0].id); give each question its own id',
    )


async def test_a_huge_integer_is_bad_json_not_a_500(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        status, _, body = await post(f"{running.base_url}/v1/questions", b'{"questions": ' + b"9" * 10_000 + b"}")
    assert (status, body["error"]["code"]) == (400, "BAD_JSON")
