"""Each new question is pushed to the devices of the people who may answer it, through a real `serve`: the local
push service checks the VAPID header and decrypts the payload on its own; 410 removes a device; 429 and 5xx are
retried, other refusals are not."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bot.program import Running
from tests.web.helpers import PLAN_REVIEW
from tests.web.oidc_provider import Provider
from tests.web.push.push_service import PushService
from tests.web.push.rig import CHOICE, Person, ask, push_of, serving, settled, signed_in

pytestmark = pytest.mark.anyio


async def test_a_new_question_arrives_decrypted_with_its_buttons_and_answer_token(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    assert await alice.subscribe(phone) == 201
    question_id = await ask(program, CHOICE)
    [push] = await push_service.wait_for(phone)
    assert push_service.problems == []
    assert push.payload is not None
    assert push.payload["id"] == question_id
    assert "Deploy to which environment?" in push.payload["title"] + push.payload["body"]
    assert push.payload["actions"] == [{"action": "o0", "title": "staging"}, {"action": "o1", "title": "prod"}]
    assert push.payload["answer_url"] == f"/push/answer/{question_id}"
    assert push.payload["url"] == f"/#card-{question_id}"
    assert push.payload["answer_token"]
    assert push.claims["aud"] == push_service.origin
    assert push.claims["sub"] == "mailto:ops@example.org"
    assert push.key == (await push_of(program).keys()).public_key
    assert push.headers["Urgency"] == "high" and int(push.headers["TTL"]) > 0


async def test_a_question_that_needs_words_gets_no_buttons(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    await alice.subscribe(phone)
    await ask(program, {"id": "why", "question": "Why did the build fail?"})
    await ask(program, PLAN_REVIEW)
    pushes = await push_service.wait_for(phone, 2)
    by_question = {push.payload["body"]: push.payload for push in pushes if push.payload}
    assert by_question["Why did the build fail?"]["actions"] == []
    # A plan review's "Request changes" asks for words: only Approve is a button.
    assert by_question["Ship the migration plan?"]["actions"] == [{"action": "o0", "title": "Approve"}]


async def test_a_long_question_is_trimmed_to_one_record(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    await alice.subscribe(phone)
    # 1,991 characters whose JSON takes 4,631 bytes: more than one push record holds.
    long = {"id": "long", "question": "Which one? " + '€"\\' * 660, "options": [{"label": "a"}, {"label": "b"}]}
    await ask(program, long)
    [push] = await push_service.wait_for(phone)
    assert push.size <= 4096 and push.payload is not None
    assert push.payload["body"].startswith("Which one? €") and push.payload["body"].endswith("…")
    assert len(push.payload["actions"]) == 2 and push.payload["answer_token"]


async def test_only_the_people_who_may_answer_get_the_push(
    provider: Provider, push_service: PushService, tmp_path: Path
) -> None:
    routes = (
        '[[web.subscriptions]]\nagents = ["ops-*"]\nresponders = ["bob@other.org"]\n'
        "[[web.subscriptions]]\nagentless = true\n"
    )
    async with (
        serving(provider, tmp_path / "a.db", routes) as program,
        signed_in(program, provider, "alice@example.org") as alice,
        signed_in(program, provider, "bob@other.org") as bob,
    ):
        alices, bobs = push_service.device(), push_service.device()
        assert await alice.subscribe(alices) == 201
        assert await bob.subscribe(bobs) == 201
        ops = await ask(program, CHOICE, agent="ops-1")
        await settled(program)
        assert [push.payload["id"] for push in push_service.pushes_to(bobs) if push.payload] == [ops]
        assert push_service.pushes_to(alices) == []
        # No responders: everyone with a device gets it.
        anyone = await ask(program, CHOICE)
        await settled(program)
        assert [push.payload["id"] for push in push_service.pushes_to(alices) if push.payload] == [anyone]
        assert len(push_service.pushes_to(bobs)) == 2


async def test_a_device_the_push_service_says_is_gone_is_removed(
    program: Running, alice: Person, push_service: PushService
) -> None:
    gone, kept = push_service.device(), push_service.device()
    gone.script.append(410)
    await alice.subscribe(gone)
    await alice.subscribe(kept)
    await ask(program, CHOICE)
    await settled(program)
    store = program.installation.ledger.store
    assert [device.endpoint for device in await store.list_push_subscriptions()] == [kept.endpoint]
    await ask(program, CHOICE | {"id": "again"})
    await settled(program)
    assert len(push_service.pushes_to(gone, delivered_only=False)) == 1
    assert len(push_service.pushes_to(kept)) == 2


async def test_429_is_retried_after_its_retry_after(program: Running, alice: Person, push_service: PushService) -> None:
    phone = push_service.device()
    phone.script.append(429)
    phone.retry_after = "1"
    await alice.subscribe(phone)
    await ask(program, CHOICE)
    await push_service.wait_for(phone)
    first, second = push_service.pushes_to(phone, delivered_only=False)
    assert (first.status, second.status) == (429, 201)
    assert second.at - first.at >= 0.9  # waited as it was told (a lower bound: never flaky)


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retried_then_given_up_and_the_device_kept(
    program: Running, alice: Person, push_service: PushService, status: int
) -> None:
    phone = push_service.device()
    phone.script.extend([status] * 1000)
    await alice.subscribe(phone)
    await ask(program, CHOICE)
    await settled(program)
    attempts = push_service.pushes_to(phone, delivered_only=False)
    assert len(attempts) > 1 and {push.status for push in attempts} == {status}
    assert len(await program.installation.ledger.store.list_push_subscriptions()) == 1


@pytest.mark.parametrize("status", [400, 403, 413])
async def test_other_refusals_are_not_retried(
    program: Running, alice: Person, push_service: PushService, status: int
) -> None:
    phone = push_service.device()
    phone.script.append(status)
    await alice.subscribe(phone)
    await ask(program, CHOICE)
    await settled(program)
    assert [push.status for push in push_service.pushes_to(phone, delivered_only=False)] == [status]
    assert len(await program.installation.ledger.store.list_push_subscriptions()) == 1


async def test_stopping_cancels_the_pushes_still_retrying(
    provider: Provider, push_service: PushService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.web.push import sender

    monkeypatch.setattr(sender, "DEADLINE_SECONDS", 600.0)
    monkeypatch.setattr(sender, "FIRST_BACKOFF_SECONDS", 300.0)
    phone = push_service.device()
    phone.script.extend([503] * 10)
    with anyio.fail_after(20):  # a stop that waited for the retry would take five minutes
        async with (
            serving(provider, tmp_path / "a.db") as program,
            signed_in(program, provider, "alice@example.org") as alice,
        ):
            await alice.subscribe(phone)
            await ask(program, CHOICE)
            await push_service.wait_for(phone, delivered_only=False)
    assert [push.status for push in push_service.pushes_to(phone, delivered_only=False)] == [503]
