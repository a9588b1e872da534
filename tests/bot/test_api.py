"""The HTTP API contract: every status, every error code, auth, long-poll, cancel, and survival across a restart."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from core import AskUserQuestionAnswerItem
from tests.fake_clock import FakeClock

from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}
ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


async def call(method: str, url: str, body: Any = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=body, **kwargs) as response:
        return response.status, await response.json()


async def answer(running: Any, question_id: str, label: str, by: str = "alice") -> Any:
    item = AskUserQuestionAnswerItem(id="go", selected=[label])
    return await running.installation.ledger.submit(question_id, {"go": item}, by=by, via="web")


async def test_ask_then_answer_then_read_the_answer(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        status, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        assert (status, body["status"]) == (202, "pending")
        question_id = body["id"]
        await channels["web"].delivery_seen.wait()
        status, body = await call("GET", f"{running.base_url}/v1/questions/{question_id}")
        assert (status, body["status"]) == (200, "pending")
        await answer(running, question_id, "No")
        status, body = await call("GET", f"{running.base_url}/v1/questions/{question_id}")
    assert body["status"] == "answered"
    assert body["answer"] == {"answers": [{"id": "go", "selected": ["No"]}]}
    assert (body["resolvedBy"], body["resolvedVia"]) == ("alice", "web")


async def test_long_poll_returns_as_soon_as_the_answer_lands(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        _, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        question_id = body["id"]
        await channels["web"].delivery_seen.wait()
        result: dict[str, Any] = {}

        async def poll() -> None:
            result.update((await call("GET", f"{running.base_url}/v1/questions/{question_id}?wait=60"))[1])

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(poll)
                await anyio.sleep(0.2)
                assert result == {}
                await answer(running, question_id, "Yes")
    assert result["status"] == "answered"


async def test_an_agent_is_routed_and_recorded(tmp_path: Path) -> None:
    extra = '[[web.subscriptions]]\nagents = ["deploy-*"]\n'
    async with program(config_for(tmp_path, extra)) as (running, channels):
        body = ASK | {"agent": {"id": "deploy-7", "name": "Deployer", "labels": {"team": "infra"}}}
        status, reply = await call("POST", f"{running.base_url}/v1/questions", body)
        assert status == 202
        await channels["web"].delivery_seen.wait()
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{reply['id']}")
        assert shown["agent"] == {"id": "deploy-7", "name": "Deployer", "labels": {"team": "infra"}}
        status, refused = await call("POST", f"{running.base_url}/v1/questions", ASK | {"agent": {"id": "other"}})
    assert (status, refused["error"]["code"]) == (422, "NO_PROVIDER")


def _plan_review(intent: dict[str, str]) -> dict[str, Any]:
    options = [{"label": "Approve"}, {"label": "Revise…"}]
    return {
        "id": "p",
        "question": "Plan ok?",
        "detail": "1. x",
        "options": options,
        "intent": {"kind": "plan-review"} | intent,
    }


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        ({"questions": []}, 422, "EMPTY_QUESTIONS", "ask_user_question requires at least one question"),
        (
            {
                "questions": [
                    {
                        "id": "p",
                        "question": "Plan ok?",
                        "detail": "1. x",
                        "options": [{"label": "Approve"}],
                        "intent": {"kind": "plan-review", "approve": "Ship"},
                    }
                ]
            },
            422,
            "BAD_INTENT",
            'question p declares intent plan-review whose approve label "Ship" names none of its options',
        ),
        (
            {"questions": [_plan_review({"approve": "Approve", "reject": "Deny…"})]},
            422,
            "BAD_INTENT",
            'question p declares intent plan-review whose reject label "Deny…" names none of its options',
        ),
        (
            {"questions": [_plan_review({"approve": "Approve", "reject": "Approve"})]},
            422,
            "BAD_INTENT",
            'question p declares intent plan-review whose reject label "Approve" is also its approve label; '
            "name the option that asks for the person's words",
        ),
        (
            {"questions": [_plan_review({"approve": "Approve", "reject": "Deny\u0007"})]},
            422,
            "BAD_REQUEST",
            "questions[0].intent.reject: contains the control character U+0007; it must be one line of plain text",
        ),
        ({"questions": [{"id": "a"}]}, 422, "BAD_REQUEST", "questions[0].question: Field required"),
        ({"questions": [], "extra": 1}, 422, "BAD_REQUEST", "extra: Extra inputs are not permitted"),
        ([1, 2], 422, "BAD_REQUEST", "body: Input should be a valid dictionary or instance of AskBody"),
        (  # the transport's own checks answer before the model's: the NUL is named, not the missing question
            {"questions": [{"id": "a\u0000"}, {"id": "b", "question": 5}]},
            422,
            "BAD_REQUEST",
            "questions[0].id: contains the control character U+0000; it must be one line of plain text",
        ),
        (  # a duplicate id is named even when a later question is of the wrong type
            {"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "?"}, 3]},
            422,
            "BAD_REQUEST",
            'questions[1].id: duplicate id "a" (as questions[0].id); give each question its own id',
        ),
    ],
)
async def test_bad_requests_get_the_seams_codes(
    tmp_path: Path, body: Any, status: int, code: str, message: str
) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        got_status, reply = await call("POST", f"{running.base_url}/v1/questions", body)
        assert await running.installation.store.count_questions() == 0
    assert (got_status, reply) == (status, {"error": {"code": code, "message": message}})
    assert channels["web"].delivered == []


async def test_garbage_and_oversize_bodies_are_refused_clearly(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _), aiohttp.ClientSession() as session:
        url = f"{running.base_url}/v1/questions"
        async with session.post(url, data=b"\xff\xfe{not json", headers=JSON) as response:
            assert (response.status, (await response.json())["error"]["code"]) == (400, "BAD_JSON")
        big = io.BytesIO(b'{"questions": [{"id": "a", "question": "' + b"x" * (3 * 1024 * 1024) + b'"}]}')
        async with session.post(url, data=big, headers={"Content-Type": "application/json"}) as response:
            assert response.status == 413


async def test_unknown_ids_and_bad_waits(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        assert (await call("GET", f"{running.base_url}/v1/questions/q_nope"))[0] == 404
        assert (await call("DELETE", f"{running.base_url}/v1/questions/q_nope"))[0] == 404
        status, body = await call("GET", f"{running.base_url}/v1/questions/q_nope?wait=forever")
    assert (status, body["error"]["code"]) == (400, "BAD_WAIT")


async def test_cancel_retracts_and_a_second_cancel_conflicts(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        _, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        question_id = body["id"]
        await channels["web"].delivery_seen.wait()
        status, cancelled = await call("DELETE", f"{running.base_url}/v1/questions/{question_id}")
        assert (status, cancelled["status"], cancelled["error"]["code"]) == (200, "cancelled", "ASK_CANCELLED")
        status, again = await call("DELETE", f"{running.base_url}/v1/questions/{question_id}")
        assert (status, again["error"]["code"]) == (409, "ALREADY_RESOLVED")
        with anyio.fail_after(5):
            while not channels["web"].closed:
                await anyio.sleep(0.01)
        late = await answer(running, question_id, "Yes")
    assert channels["web"].closed[0].status == "cancelled"
    assert not late.won


async def test_expiry_is_reported_as_expired_with_ask_timeout(tmp_path: Path) -> None:
    clock = FakeClock()
    extra = '[[web.subscriptions]]\nexpire_after = "1h"\n'
    async with program(config_for(tmp_path, extra), clock=clock) as (running, channels):
        _, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        await channels["web"].delivery_seen.wait()
        await clock.advance(timedelta(hours=1))
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{body['id']}?wait=5")
    assert (shown["status"], shown["error"]) == (
        "expired",
        {"code": "ASK_TIMEOUT", "message": "nobody answered within 1h"},
    )


async def test_a_token_is_required_when_configured(tmp_path: Path) -> None:
    config = config_for(tmp_path, "", environ={"HR_TOKEN": "s3cret"})
    config = config.model_copy(update={"server": config.server.model_copy(update={"api_token_env": "HR_TOKEN"})})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HR_TOKEN", "s3cret")
        async with program(config) as (running, _):
            url = f"{running.base_url}/v1/questions"
            assert (await call("GET", url))[0] == 401
            assert (await call("GET", url, headers={"Authorization": "Bearer wrong"}))[0] == 401
            assert (await call("GET", url, headers={"Authorization": "Bearer s3cret"}))[0] == 200
            assert (await call("GET", f"{running.base_url}/openapi.json"))[0] == 200


async def test_openapi_describes_every_route(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        _, document = await call("GET", f"{running.base_url}/openapi.json")
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) == {
        "/v1/questions",
        "/v1/questions/{id}",
        "/v1/permissions",
        "/v1/notes",
        "/metrics",
        "/healthz",
    }
    assert {"AskBody", "PermissionBody", "PermissionWire", "Rule", "NoteBody"} <= set(document["components"]["schemas"])


async def test_a_pending_question_survives_a_restart_and_is_not_sent_twice(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    async with program(config) as (running, channels):
        _, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        await channels["web"].delivery_seen.wait()
    question_id = body["id"]
    async with program(config) as (running, channels):
        assert running.resumed == 1
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{question_id}")
        assert shown["status"] == "pending"
        with anyio.fail_after(5):
            while (held := running.installation.ledger.get(question_id)) is None or not held.holders:
                await anyio.sleep(0.01)
        await answer(running, question_id, "Yes", by="bob")
        _, shown = await call("GET", f"{running.base_url}/v1/questions/{question_id}?wait=5")
    assert channels["web"].delivered == []
    assert (shown["status"], shown["resolvedBy"]) == ("answered", "bob")


async def test_a_question_approved_by_two_names_both_in_resolved_by_and_approved_by(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, channels):
        _, body = await call("POST", f"{running.base_url}/v1/questions", ASK_APPROVE)
        question_id = body["id"]
        await channels["web"].delivery_seen.wait()
        ledger = running.installation.ledger
        approve = AskUserQuestionAnswerItem(id="go", selected=["Approve"])
        await ledger.approve(question_id, approve, by="ann", via="web", identity="ann", needed=2)
        _, pending = await call("GET", f"{running.base_url}/v1/questions/{question_id}")
        await ledger.approve(question_id, approve, by="U0BOB", via="slack", identity="u0bob", needed=2)
        _, answered = await call("GET", f"{running.base_url}/v1/questions/{question_id}")
    assert (pending["status"], pending["approvedBy"]) == ("pending", ["ann"])
    assert (answered["status"], answered["resolvedBy"], answered["approvedBy"]) == (
        "answered",
        "ann, U0BOB",
        ["ann", "U0BOB"],
    )


ASK_APPROVE = {"questions": [{"id": "go", "question": "Ship?", "options": [{"label": "Approve"}, {"label": "No"}]}]}


async def test_an_ask_reaching_a_stopping_process_gets_503_stopping_and_stores_nothing(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        running.installation.ledger.close()  # what stopping does first (a shutdown, or a lost lease)
        status, body = await call("POST", f"{running.base_url}/v1/questions", ASK)
        stored = await running.installation.ledger.store.list_questions()
    assert (status, body["error"]["code"]) == (503, "STOPPING")
    assert "ask again" in body["error"]["message"]
    assert stored == []


async def test_a_method_a_path_does_not_take_is_405_before_anything_about_its_body(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        url = f"{running.base_url}/v1/questions/q_any"
        async with aiohttp.ClientSession() as session, session.post(url, data=b"plain text") as response:
            status, allow, body = response.status, response.headers.get("Allow"), await response.json()
    assert (status, allow, body["error"]["code"]) == (405, "DELETE, GET, HEAD", "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize("multi", [0, 1, "true", None])
async def test_a_body_is_read_with_json_s_own_types(tmp_path: Path, multi: object) -> None:
    body = {"questions": [{"id": "go", "question": "Deploy?", "multiSelect": multi}]}
    async with program(config_for(tmp_path)) as (running, _):
        status, refused = await call("POST", f"{running.base_url}/v1/questions", body)
    assert (status, refused["error"]["code"]) == (422, "BAD_REQUEST")
    assert refused["error"]["message"].startswith("questions[0].multiSelect: ")
