"""Answering from a notification's button, through a real `serve`: the device's answer token is the only credential
(no cookie, no CSRF); it answers once, as the device's owner, and is refused with a 4xx that changes nothing when
replayed, tampered with, for another question, or once the question is over. A person's second device adds no
second approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.program import Running
from tests.web.helpers import PLAN_REVIEW
from tests.web.oidc_provider import Provider
from tests.web.push.push_service import Device, PushService
from tests.web.push.rig import CHOICE, Person, ask, outcome, serving, signed_in, tap

pytestmark = pytest.mark.anyio


async def token_for(push_service: PushService, device: Device, question_id: str) -> str:
    with anyio.fail_after(20):
        while True:
            for push in push_service.pushes_to(device):
                if push.payload is not None and push.payload["id"] == question_id:
                    return str(push.payload["answer_token"])
            await push_service.wait_for(device, len(push_service.pushes_to(device)) + 1)


async def asked_with_token(
    program: Running,
    alice: Person,
    push_service: PushService,
    question: dict[str, Any] = CHOICE,
    *,
    phone: Device | None = None,
) -> tuple[str, str]:
    """`question` asked once alice's phone gets notifications: its id, and the answer token its push carried."""
    phone = push_service.device() if phone is None else phone
    await alice.subscribe(phone)
    question_id = await ask(program, question)
    return question_id, await token_for(push_service, phone, question_id)


async def test_a_button_answers_once_as_the_devices_owner(
    program: Running, alice: Person, push_service: PushService
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    status, said = await tap(program, question_id, token, "o1")
    assert status == 200 and said["ok"] is True
    result = await outcome(program, question_id)
    assert result["status"] == "answered"
    assert result["resolvedBy"] == "alice@example.org"
    assert result["answer"]["answers"][0]["selected"] == ["prod"]
    # The same token again: refused, and nothing changes.
    status, said = await tap(program, question_id, token, "o0")
    assert status == 409 and said["ok"] is False
    assert (await outcome(program, question_id))["answer"]["answers"][0]["selected"] == ["prod"]


def tampered(token: str) -> list[str]:
    payload, _, signature = token.partition(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    return [
        f"{payload}.{flipped}",
        payload[:-2] + ("x" if payload[-2] != "x" else "y") + payload[-1] + "." + signature,
        payload,
        token + "x",
        "",
        "x" * 5000,
        "é" * 10,
    ]


async def test_a_tampered_or_made_up_token_is_refused(
    program: Running, alice: Person, push_service: PushService
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    for forged in tampered(token):
        status, said = await tap(program, question_id, forged)
        assert status in (400, 401), forged
        assert said["ok"] is False
    assert (await outcome(program, question_id))["status"] == "pending"
    # The real one still works: the forgeries spent nothing.
    assert (await tap(program, question_id, token))[0] == 200


async def test_no_token_or_a_cookie_is_not_enough(program: Running, alice: Person, push_service: PushService) -> None:
    question_id = await ask(program, CHOICE)
    url = f"{program.base_url}/push/answer/{question_id}"
    async with alice.session.post(url, json={"action": "o0"}, headers=alice.headers) as reply:
        assert reply.status == 401
    basic = {"Authorization": "Basic eDp5"}
    async with aiohttp.ClientSession() as worker, worker.post(url, json={"action": "o0"}, headers=basic) as reply:
        assert reply.status == 401
    assert (await outcome(program, question_id))["status"] == "pending"


async def test_a_token_for_another_question_is_refused(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    await alice.subscribe(phone)
    first = await ask(program, CHOICE)
    second = await ask(program, CHOICE | {"id": "other"})
    token = await token_for(push_service, phone, first)
    status, _ = await tap(program, second, token)
    assert status == 403
    assert (await outcome(program, second))["status"] == "pending"
    assert (await tap(program, first, token))[0] == 200


@pytest.mark.parametrize("action", ["o7", "o1x", "approve", "", "o-1", "o0001"])
async def test_an_action_the_notification_did_not_offer_is_refused_and_spends_nothing(
    program: Running, alice: Person, push_service: PushService, action: str
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    assert (await tap(program, question_id, token, action))[0] == 400
    assert (await outcome(program, question_id))["status"] == "pending"
    assert (await tap(program, question_id, token, "o0"))[0] == 200


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"action": 0}', b'{"action": "' + b"o" * 2000 + b'"}'])
async def test_a_garbage_body_is_refused(
    program: Running, alice: Person, push_service: PushService, body: bytes
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    url = f"{program.base_url}/push/answer/{question_id}"
    bearer = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as worker, worker.post(url, data=body, headers=bearer) as reply:
        assert reply.status == 400
    assert (await outcome(program, question_id))["status"] == "pending"


async def test_a_question_that_needs_words_cannot_be_answered_by_a_button(
    program: Running, alice: Person, push_service: PushService
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service, {"id": "why", "question": "Why?"})
    assert (await tap(program, question_id, token, "o0"))[0] == 400
    assert (await outcome(program, question_id))["status"] == "pending"


async def test_after_the_question_is_answered_elsewhere_the_button_is_refused(
    program: Running, provider: Provider, alice: Person, push_service: PushService
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    async with signed_in(program, provider, "bob@other.org") as bob:
        form = {"csrf": bob.csrf, "q0": "0", "action": "send"}
        url = f"{program.base_url}/questions/{question_id}/answer"
        async with bob.session.post(url, data=form, allow_redirects=False) as reply:
            assert reply.status == 303
    status, said = await tap(program, question_id, token, "o1")
    assert status == 409 and "bob@other.org" in said["message"]
    assert (await outcome(program, question_id))["resolvedBy"] == "bob@other.org"


async def test_after_the_question_is_cancelled_the_button_is_refused(
    program: Running, alice: Person, push_service: PushService
) -> None:
    question_id, token = await asked_with_token(program, alice, push_service)
    async with aiohttp.ClientSession() as agent, agent.delete(f"{program.base_url}/v1/questions/{question_id}") as gone:
        assert gone.status < 300
    assert (await tap(program, question_id, token))[0] == 409
    assert (await outcome(program, question_id))["status"] == "cancelled"


async def test_after_the_question_expired_the_button_is_refused(
    provider: Provider, push_service: PushService, tmp_path: Path
) -> None:
    expiring = '[[web.subscriptions]]\nexpire_after = "1s"\n'
    async with (
        serving(provider, tmp_path / "a.db", expiring) as program,
        signed_in(program, provider, "alice@example.org") as alice,
    ):
        question_id, token = await asked_with_token(program, alice, push_service)
        with anyio.fail_after(20):
            while (await outcome(program, question_id))["status"] == "pending":
                await anyio.sleep(0.1)
        assert (await tap(program, question_id, token))[0] == 409
        assert (await outcome(program, question_id))["status"] == "expired"


async def test_a_device_turned_off_can_no_longer_answer(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    question_id, token = await asked_with_token(program, alice, push_service, phone=phone)
    url = program.base_url + "/push/subscriptions"
    async with alice.session.delete(url, json={"endpoint": phone.endpoint}, headers=alice.headers) as reply:
        assert reply.status == 200
    assert (await tap(program, question_id, token))[0] == 403
    assert (await outcome(program, question_id))["status"] == "pending"


async def test_two_devices_of_one_person_give_one_approval(
    provider: Provider, push_service: PushService, tmp_path: Path
) -> None:
    async with (
        serving(provider, tmp_path / "a.db", "[[web.subscriptions]]\napprovals = 2\n") as program,
        signed_in(program, provider, "alice@example.org") as alice,
        signed_in(program, provider, "bob@other.org") as bob,
    ):
        phone, laptop, bobs = push_service.device(), push_service.device(), push_service.device()
        await alice.subscribe(phone)
        await alice.subscribe(laptop)
        await bob.subscribe(bobs)
        question_id = await ask(program, PLAN_REVIEW)
        status, said = await tap(program, question_id, await token_for(push_service, phone, question_id))
        assert status == 200 and "1 of 2" in said["message"]
        status, said = await tap(program, question_id, await token_for(push_service, laptop, question_id))
        assert status == 409 and "already approved" in said["message"]
        assert (await outcome(program, question_id))["status"] == "pending"
        assert (await tap(program, question_id, await token_for(push_service, bobs, question_id)))[0] == 200
        result = await outcome(program, question_id)
        assert result["status"] == "answered"
        assert result["approvedBy"] == ["alice@example.org", "bob@other.org"]
