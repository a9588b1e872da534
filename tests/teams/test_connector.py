"""The Bot Connector calls against the local Teams: the token kept and renewed, 429s waited out once, bodies over
28,000 bytes never sent, members read, and the password never shown."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from bot.teams.connector import MAX_BODY, BodyTooLarge, BotToken, Connector, TeamsCallError, body_bytes, retry_after
from tests.channel_rig import Waits

from .fake_teams import ALICE, APP_ID, APP_PASSWORD, CONVERSATION, FakeTeams, fake_teams

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def connector(password: str = APP_PASSWORD) -> AsyncIterator[tuple[FakeTeams, Connector, Waits]]:
    async with fake_teams() as fake:
        waits = Waits()
        client = Connector(BotToken(fake.token_url, APP_ID, password), sleep=waits)
        try:
            yield fake, client, waits
        finally:
            await client.close()


def message(text: str) -> dict[str, object]:
    return {"type": "message", "text": text}


async def test_one_token_serves_many_calls() -> None:
    async with connector() as (fake, client, _):
        for number in range(3):
            await client.post(fake.service_url, CONVERSATION, message(f"hello {number}"))
        assert fake.token_requests == 1


async def test_a_token_is_renewed_shortly_before_it_expires() -> None:
    async with fake_teams() as fake:
        now = [0.0]
        client = Connector(BotToken(fake.token_url, APP_ID, APP_PASSWORD, clock=lambda: now[0]))
        try:
            await client.post(fake.service_url, CONVERSATION, message("one"))
            now[0] += fake.token_lifetime - 200
            await client.post(fake.service_url, CONVERSATION, message("two"))
        finally:
            await client.close()
        assert fake.token_requests == 2


async def test_a_post_and_an_update_change_the_message_in_place() -> None:
    async with connector() as (fake, client, _):
        posted = await client.post(fake.service_url, CONVERSATION, message("asked"))
        await client.update(fake.service_url, CONVERSATION, posted, message("answered"))
        assert fake.activities[posted]["text"] == "answered"


async def test_a_429_waits_its_retry_after_then_retries_once() -> None:
    async with connector() as (fake, client, waits):
        fake.rate_limit("POST", retry_after="7")
        await client.post(fake.service_url, CONVERSATION, message("asked"))
        assert waits.seconds == [7.0]
        assert [call.status for call in fake.calls] == [429, 201]


async def test_a_second_429_fails_the_call_after_one_wait() -> None:
    async with connector() as (fake, client, waits):
        fake.rate_limit("PUT", retry_after="2", times=2)
        posted = await client.post(fake.service_url, CONVERSATION, message("asked"))
        with pytest.raises(TeamsCallError) as failure:
            await client.update(fake.service_url, CONVERSATION, posted, message("answered"))
        assert failure.value.status == 429
        assert waits.seconds == [2.0]


def test_retry_after_reads_seconds_and_http_dates_and_shrugs_at_garbage() -> None:
    assert retry_after("3") == 3.0
    assert retry_after("Sun, 06 Dec 2026 10:00:30 GMT", now=1796551200.0) == 30.0
    assert retry_after("soon") == 1.0 and retry_after(None) == 1.0 and retry_after("-5") == 0.0


async def test_a_body_over_28000_bytes_is_never_sent() -> None:
    async with connector() as (fake, client, _):
        big = message("é" * (MAX_BODY // 2))
        assert len(body_bytes(big)) > MAX_BODY
        with pytest.raises(BodyTooLarge):
            await client.post(fake.service_url, CONVERSATION, big)
        assert fake.calls == []


async def test_a_refused_token_is_replaced_once() -> None:
    async with connector() as (fake, client, _):
        await client.post(fake.service_url, CONVERSATION, message("one"))
        fake.tokens.clear()  # Teams forgot it
        await client.post(fake.service_url, CONVERSATION, message("two"))
        assert fake.token_requests == 2


async def test_a_member_is_read_with_email_upn_and_object_id() -> None:
    async with connector() as (fake, client, _):
        member = await client.member(fake.service_url, CONVERSATION, ALICE.id)
        assert member is not None
        assert (member.shown, member.handles) == (ALICE.name, (ALICE.email, ALICE.aad))
        assert await client.member(fake.service_url, CONVERSATION, "29:nobody") is None


async def test_a_wrong_password_fails_without_showing_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "very-secret-wrong-password"
    async with connector(secret) as (fake, client, _):
        with pytest.raises(TeamsCallError) as failure:
            await client.post(fake.service_url, CONVERSATION, message("asked"))
        assert failure.value.status == 401 and "invalid_client" in str(failure.value)
        assert secret not in str(failure.value) + caplog.text + repr(client.token)


async def test_an_unreachable_teams_is_a_call_error() -> None:
    client = Connector(BotToken("http://127.0.0.1:9/token", APP_ID, APP_PASSWORD))
    try:
        with pytest.raises(TeamsCallError) as failure:
            await client.post("http://127.0.0.1:9/", CONVERSATION, message("asked"))
        assert failure.value.status == 0
    finally:
        await client.close()
