"""Replicas on one PostgreSQL store push as one server: the same VAPID key (`k=`) on each, a device subscribed through
one gets the questions asked through another, and a button's token made by one answers on another, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.oidc_provider import Provider
from tests.web.push.push_service import PushService
from tests.web.push.rig import CHOICE, ask, outcome, push_of, serving, signed_in, tap

pytestmark = pytest.mark.anyio


async def test_replicas_share_the_key_the_devices_and_the_tokens(
    provider: Provider, push_service: PushService, tmp_path: Path, postgres_url: str
) -> None:
    async with (
        serving(provider, tmp_path / "a.db", postgres_url=postgres_url) as first,
        serving(provider, tmp_path / "b.db", postgres_url=postgres_url) as second,
        signed_in(first, provider, "alice@example.org") as alice,
    ):
        assert (await push_of(first).keys()).public_key == (await push_of(second).keys()).public_key
        phone = push_service.device()
        assert await alice.subscribe(phone) == 201
        question_id = await ask(second, CHOICE)
        [push] = await push_service.wait_for(phone)
        assert push.payload is not None and push.payload["id"] == question_id
        assert push.key == (await push_of(first).keys()).public_key
        token = str(push.payload["answer_token"])
        assert (await tap(first, question_id, token, "o1"))[0] == 200
        assert (await tap(second, question_id, token, "o0"))[0] == 409
        assert (await outcome(second, question_id))["resolvedBy"] == "alice@example.org"
