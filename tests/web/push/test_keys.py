"""The VAPID key pair is made on the first start and kept in the store: the same `k=` after a restart. And the
`[web.push]` table is checked at load: a subject push services can use, and sign-in to say who a push is for."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from bot.config import parse_config
from bot.settings.errors import ConfigError
from bot.web.push.keys import KEPT_NAME, VapidKeyError, VapidKeys
from tests.web.oidc_provider import Provider
from tests.web.push.push_service import PushService
from tests.web.push.rig import CHOICE, ask, push_of, serving, signed_in

pytestmark = pytest.mark.anyio

SIGN_IN = '[web.sign_in]\nissuer = "https://id.example.org"\nclient_id = "x"\nclient_secret_env = "S"\n'
SIGN_IN += 'allowed = ["@example.org"]\n'


async def test_a_restart_keeps_the_key_pair(provider: Provider, push_service: PushService, tmp_path: Path) -> None:
    keys: list[str] = []
    for _ in range(2):
        async with (
            serving(provider, tmp_path / "kept.db") as program,
            signed_in(program, provider, "alice@example.org") as alice,
        ):
            phone = push_service.device()
            await alice.subscribe(phone)
            await ask(program, CHOICE)
            [push] = await push_service.wait_for(phone)
            keys.append(push.key)
            async with alice.session.get(program.base_url + "/push/key") as reply:
                assert (await reply.json())["publicKey"] == push.key
            kept = await program.installation.ledger.store.keep_value(KEPT_NAME, "unused")
            assert kept != "unused"
    assert keys[0] == keys[1]
    assert push_service.problems == []


async def test_another_store_makes_its_own_key(provider: Provider, tmp_path: Path) -> None:
    found: list[str] = []
    for name in ("one.db", "two.db"):
        async with serving(provider, tmp_path / name) as program:
            found.append((await push_of(program).keys()).public_key)
    assert found[0] != found[1]


def test_a_kept_value_that_is_not_a_key_is_refused_with_a_clear_error() -> None:
    for garbage in ("", "not a key", "AAAA", "é"):
        with pytest.raises(VapidKeyError, match=KEPT_NAME):
            VapidKeys(garbage, "mailto:ops@example.org")


@pytest.mark.parametrize("subject", ["ops@example.org", "http://example.org", "mailto:", "https://", "", "tel:123"])
def test_a_subject_push_services_cannot_use_stops_the_config(subject: str) -> None:
    text = f'[web.push]\nsubject = "{subject}"\n' + SIGN_IN
    with pytest.raises(ConfigError) as stopped:
        parse_config(text, environ={"S": "x"})
    assert "web.push.subject" in str(stopped.value) and "\n" not in str(stopped.value)


def test_push_without_sign_in_stops_the_config_in_one_line() -> None:
    with pytest.raises(ConfigError) as stopped:
        parse_config('[web.push]\nsubject = "mailto:ops@example.org"\n', environ={})
    assert "web.push" in str(stopped.value) and "[web.sign_in]" in str(stopped.value)
    assert "\n" not in str(stopped.value)


def test_push_turned_off_needs_nothing() -> None:
    config = parse_config('[web.push]\nenabled = false\nsubject = "mailto:ops@example.org"\n', environ={})
    assert config.web.push is not None and not config.web.pushes  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize("subject", ["mailto:ops@example.org", "https://handraise.example.org/contact"])
def test_a_good_subject_loads(subject: str) -> None:
    config = parse_config(f'[web.push]\nsubject = "{subject}"\n' + SIGN_IN, environ={"S": "x"})
    assert config.web.push.subject == subject  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]


async def test_without_push_the_push_routes_are_not_there(provider: Provider, tmp_path: Path) -> None:
    from tests.web.test_sign_in import serving as serving_without_push

    async with (
        serving_without_push(provider, tmp_path) as program,
        aiohttp.ClientSession() as client,
        client.get(program.base_url + "/push/key") as reply,
    ):
        assert reply.status == 404
