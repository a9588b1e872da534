"""Turning notifications on and off from the inbox page, through a real `serve`: the page's own requests only (a
session, the inbox's CSRF token in `X-CSRF-Token`, no foreign `Origin`), and hostile bodies refused with a 4xx that
stores nothing."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from bot.program import Running
from tests.web.oidc_provider import Provider
from tests.web.push.push_service import PushService, b64
from tests.web.push.rig import Person, signed_in

pytestmark = pytest.mark.anyio


async def kept(program: Running) -> list[tuple[str, str]]:
    devices = await program.installation.ledger.store.list_push_subscriptions()
    return [(device.person, device.endpoint) for device in devices]


async def test_the_page_gets_the_application_server_key_when_signed_in(
    program: Running, alice: Person, push_service: PushService
) -> None:
    async with alice.session.get(program.base_url + "/push/key") as reply:
        assert reply.status == 200
        key = (await reply.json())["publicKey"]
    assert len(key) == 87 and "=" not in key  # base64url of a 65-byte uncompressed point
    async with aiohttp.ClientSession() as stranger, stranger.get(program.base_url + "/push/key") as refused:
        assert refused.status == 401


async def test_subscribe_then_again_then_unsubscribe(
    program: Running, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    assert await alice.subscribe(phone) == 201
    assert await alice.subscribe(phone) == 200  # the same device again: its keys replaced, still one row
    assert await kept(program) == [("alice@example.org", phone.endpoint)]
    url = program.base_url + "/push/subscriptions"
    async with alice.session.delete(url, json={"endpoint": phone.endpoint}, headers=alice.headers) as reply:
        assert reply.status == 200 and (await reply.json())["removed"] is True
    assert await kept(program) == []


async def test_another_person_cannot_unsubscribe_your_device(
    program: Running, provider: Provider, alice: Person, push_service: PushService
) -> None:
    phone = push_service.device()
    await alice.subscribe(phone)
    async with signed_in(program, provider, "bob@other.org") as bob:
        url = program.base_url + "/push/subscriptions"
        async with bob.session.delete(url, json={"endpoint": phone.endpoint}, headers=bob.headers) as reply:
            assert (await reply.json())["removed"] is False
    assert await kept(program) == [("alice@example.org", phone.endpoint)]


async def test_without_a_session_it_is_401(program: Running, push_service: PushService) -> None:
    async with aiohttp.ClientSession() as stranger:
        url = program.base_url + "/push/subscriptions"
        async with stranger.post(url, json=push_service.device().to_json(), headers={"X-CSRF-Token": "x"}) as reply:
            assert reply.status == 401
        async with stranger.delete(url, json={"endpoint": "https://push.example.org/x"}) as reply:
            assert reply.status == 401
    assert await kept(program) == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-CSRF-Token": ""},
        {"X-CSRF-Token": "0" * 64},
        {"X-CSRF-Token": "not-hex-at-all"},
    ],
    ids=["no token", "empty token", "wrong token", "garbage token"],
)
async def test_without_the_right_csrf_token_it_is_403(
    program: Running, alice: Person, push_service: PushService, headers: dict[str, str]
) -> None:
    url = program.base_url + "/push/subscriptions"
    async with alice.session.post(url, json=push_service.device().to_json(), headers=headers) as reply:
        assert reply.status == 403
    async with alice.session.delete(url, json={"endpoint": "https://x.example/"}, headers=headers) as reply:
        assert reply.status == 403
    assert await kept(program) == []


async def test_another_persons_csrf_token_is_refused(
    program: Running, provider: Provider, alice: Person, push_service: PushService
) -> None:
    async with signed_in(program, provider, "bob@other.org") as bob:
        url = program.base_url + "/push/subscriptions"
        headers = {"X-CSRF-Token": alice.csrf}
        async with bob.session.post(url, json=push_service.device().to_json(), headers=headers) as reply:
            assert reply.status == 403
    assert await kept(program) == []


@pytest.mark.parametrize(
    "sent",
    [{"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}],
    ids=["foreign origin", "opaque origin", "cross-site fetch"],
)
async def test_another_web_site_is_refused(
    program: Running, alice: Person, push_service: PushService, sent: dict[str, str]
) -> None:
    url = program.base_url + "/push/subscriptions"
    headers = {"X-CSRF-Token": alice.csrf, **sent}
    async with alice.session.post(url, json=push_service.device().to_json(), headers=headers) as reply:
        assert reply.status == 403
    assert await kept(program) == []


def subscription(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "endpoint": "https://fcm.googleapis.com/fcm/send/abc",
        "expirationTime": None,
        "keys": {
            "p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
            "auth": "tBHItJI5svbpez7KI4CCXg",
        },
    }
    for key, value in changes.items():
        if key in ("p256dh", "auth"):
            body["keys"][key] = value
        else:
            body[key] = value
    return body


HOSTILE: dict[str, tuple[bytes, int]] = {
    "not json": (b"{not json", 400),
    "not utf-8": (b"\xff\xfe\x00", 400),
    "a list": (b"[]", 400),
    "a string": (b'"endpoint"', 400),
    "no endpoint": (json.dumps(subscription(endpoint=None)).encode(), 400),
    "endpoint a number": (json.dumps(subscription(endpoint=7)).encode(), 400),
    "plain http": (json.dumps(subscription(endpoint="http://push.example.org/x")).encode(), 400),
    "http to a private address": (json.dumps(subscription(endpoint="http://10.0.0.5/x")).encode(), 400),
    "another scheme": (json.dumps(subscription(endpoint="file:///etc/passwd")).encode(), 400),
    "credentials in the url": (json.dumps(subscription(endpoint="https://u:p@push.example.org/x")).encode(), 400),
    "a bad port": (json.dumps(subscription(endpoint="https://push.example.org:99999/x")).encode(), 400),
    "an endpoint too long": (json.dumps(subscription(endpoint="https://p.example/" + "a" * 3000)).encode(), 400),
    "no keys": (json.dumps({"endpoint": "https://push.example.org/x"}).encode(), 400),
    "keys not base64": (json.dumps(subscription(p256dh="!!!!")).encode(), 400),
    "p256dh too short": (json.dumps(subscription(p256dh=b64(b"\x04" + b"\x01" * 32))).encode(), 400),
    "p256dh compressed": (json.dumps(subscription(p256dh=b64(b"\x02" + b"\x01" * 64))).encode(), 400),
    "p256dh off the curve": (json.dumps(subscription(p256dh=b64(b"\x04" + b"\x01" * 64))).encode(), 400),
    "auth too short": (json.dumps(subscription(auth=b64(b"\x01" * 8))).encode(), 400),
    "auth a number": (json.dumps(subscription(auth=12)).encode(), 400),
    "expirationTime a string": (json.dumps(subscription(expirationTime="soon")).encode(), 400),
    "oversize": (json.dumps(subscription(padding="x" * 10_000)).encode(), 413),
}


@pytest.mark.parametrize("name", list(HOSTILE))
async def test_garbage_and_hostile_bodies_are_refused_and_nothing_is_stored(
    program: Running, alice: Person, name: str
) -> None:
    body, status = HOSTILE[name]
    url = program.base_url + "/push/subscriptions"
    async with alice.session.post(url, data=body, headers=alice.headers) as reply:
        assert reply.status == status, await reply.text()
        assert (await reply.json())["ok"] is False
    assert await kept(program) == []


async def test_a_real_looking_https_subscription_is_kept(program: Running, alice: Person) -> None:
    async with alice.session.post(
        program.base_url + "/push/subscriptions", json=subscription(), headers=alice.headers
    ) as reply:
        assert reply.status == 201
    assert await kept(program) == [("alice@example.org", "https://fcm.googleapis.com/fcm/send/abc")]


async def test_a_person_has_a_bounded_number_of_devices(
    program: Running, alice: Person, push_service: PushService
) -> None:
    for _ in range(20):
        assert await alice.subscribe(push_service.device()) == 201
    assert await alice.subscribe(push_service.device()) == 409
    assert len(await kept(program)) == 20
