"""A local RFC 8030 push service for the tests, written from the RFCs and independent of the server's code path:
it checks each push's VAPID header (RFC 8292: the JWT's ES256 signature with the `k=` key, read by PyJWT; `aud` its
own origin; an integer `exp` at most 24 hours ahead; `sub` a mailto: or https: contact), and decrypts the body with
`cryptography`'s primitives (RFC 8291: ECDH, HKDF, AES-128-GCM, one record) using the subscriber keys the test made,
as a browser would. http_ece, which the server encrypts with, is never used here.

Each device can be told what to answer next (`script`: statuses, e.g. 429 then 201), as push services do.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import jwt
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tests.web.local_server import app_served


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Device:
    """A browser's subscription: the key pair and auth secret it made, and its endpoint at the push service."""

    endpoint: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: os.urandom(16))
    script: deque[int] = field(default_factory=deque[int])
    """Statuses to answer the next pushes with (then 201)."""
    retry_after: str | None = None

    @property
    def public(self) -> bytes:
        return self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )

    def to_json(self) -> dict[str, Any]:
        """What `PushSubscription.toJSON()` gives in a browser."""
        return {
            "endpoint": self.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64(self.public), "auth": b64(self.auth)},
        }


@dataclass(frozen=True)
class Push:
    """One push as the service received it: whose device, the decrypted payload, the JWT's claims, the key."""

    device: str
    status: int
    payload: dict[str, Any] | None
    claims: dict[str, Any]
    key: str
    headers: dict[str, str]
    size: int
    at: float
    """When it arrived (`time.monotonic()`)."""


class PushServiceError(AssertionError):
    """A push that breaks the RFCs; kept in `PushService.problems` and answered 400."""


@dataclass
class PushService:
    origin: str = ""
    devices: dict[str, Device] = field(default_factory=dict[str, Device])
    received: list[Push] = field(default_factory=list[Push])
    problems: list[str] = field(default_factory=list[str])
    arrivals: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])

    def device(self) -> Device:
        token = secrets.token_urlsafe(12)
        device = Device(endpoint=f"{self.origin}/push/{token}")
        self.devices[token] = device
        return device

    def pushes_to(self, device: Device, delivered_only: bool = True) -> list[Push]:
        name = device.endpoint.rsplit("/", 1)[1]
        return [push for push in self.received if push.device == name and (push.status == 201 or not delivered_only)]

    async def wait_for(self, device: Device, count: int = 1, *, delivered_only: bool = True) -> list[Push]:
        """The first `count` pushes to `device` (bounded: a push that never comes fails the test)."""
        with anyio.fail_after(20):
            while len(self.pushes_to(device, delivered_only)) < count:
                event = self.arrivals.setdefault("any", anyio.Event())
                await event.wait()
        return self.pushes_to(device, delivered_only)[:count]

    async def receive(self, request: web.Request) -> web.Response:
        name = request.match_info["device"]
        device = self.devices.get(name)
        if device is None:
            return web.Response(status=404)
        body = await request.read()
        try:
            claims, key = self.check_vapid(request.headers.get("Authorization", ""))
            self.check_headers(request, body)
            payload = json.loads(decrypt(body, device.key, device.auth))
        except (PushServiceError, ValueError, jwt.PyJWTError) as problem:
            self.problems.append(f"{type(problem).__name__}: {problem}")
            self.arrivals.pop("any", anyio.Event()).set()
            return web.Response(status=400, text=str(problem))
        status = device.script.popleft() if device.script else 201
        self.received.append(
            Push(name, status, payload, claims, key, dict(request.headers), len(body), time.monotonic())
        )
        self.arrivals.pop("any", anyio.Event()).set()
        headers = {"Retry-After": device.retry_after} if status == 429 and device.retry_after else {}
        if status == 201:
            headers["Location"] = f"{self.origin}/message/{secrets.token_urlsafe(8)}"
        return web.Response(status=status, headers=headers)

    def check_vapid(self, header: str) -> tuple[dict[str, Any], str]:
        scheme, _, rest = header.partition(" ")
        if scheme.lower() != "vapid":
            raise PushServiceError(f"Authorization is not the vapid scheme: {header[:40]!r}")
        params = dict(part.strip().split("=", 1) for part in rest.split(",") if "=" in part)
        token, key = params.get("t", ""), params.get("k", "")
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(key))
        if jwt.get_unverified_header(token).get("alg") != "ES256":
            raise PushServiceError("the JWT is not ES256")
        claims = jwt.decode(
            token, public, algorithms=["ES256"], audience=self.origin, options={"require": ["exp", "sub", "aud"]}
        )
        exp = claims["exp"]
        if not isinstance(exp, int) or exp > time.time() + 24 * 3600:
            raise PushServiceError(f"exp {exp!r} is not an integer within 24 hours")
        sub = claims["sub"]
        if not isinstance(sub, str) or not sub.startswith(("mailto:", "https:")):
            raise PushServiceError(f"sub {sub!r} is neither mailto: nor https:")
        return claims, key

    @staticmethod
    def check_headers(request: web.Request, body: bytes) -> None:
        if request.headers.get("Content-Encoding") != "aes128gcm":
            raise PushServiceError("Content-Encoding is not aes128gcm")
        if not request.headers.get("TTL", "").isdigit():
            raise PushServiceError("no TTL header")
        if request.headers.get("Urgency") != "high":
            raise PushServiceError("Urgency is not high")
        if len(body) > 4096:
            raise PushServiceError(f"the body is {len(body)} bytes, more than 4096")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/push/{device}", self.receive)
        return app


def decrypt(body: bytes, device_key: ec.EllipticCurvePrivateKey, auth: bytes) -> bytes:
    """RFC 8291 section 3 and RFC 8188, one record, from the primitives."""
    if len(body) < 21:
        raise PushServiceError("the body has no aes128gcm header")
    salt, record_size, id_length = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    sender = body[21 : 21 + id_length]
    ciphertext = body[21 + id_length :]
    if id_length != 65 or len(ciphertext) > record_size:
        raise PushServiceError("not one record keyed by the sender's public key")
    sender_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender)
    shared = device_key.exchange(ec.ECDH(), sender_key)
    receiver = device_key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    ikm = HKDF(hashes.SHA256(), 32, salt=auth, info=b"WebPush: info\x00" + receiver + sender).derive(shared)
    cek = HKDF(hashes.SHA256(), 16, salt=salt, info=b"Content-Encoding: aes128gcm\x00").derive(ikm)
    nonce = HKDF(hashes.SHA256(), 12, salt=salt, info=b"Content-Encoding: nonce\x00").derive(ikm)
    padded = AESGCM(cek).decrypt(nonce, ciphertext, None)
    unpadded = padded.rstrip(b"\x00")
    if not unpadded.endswith(b"\x02"):
        raise PushServiceError("the record is not the last one (delimiter 2)")
    return unpadded[:-1]


@asynccontextmanager
async def push_service_running() -> AsyncIterator[PushService]:
    service = PushService()
    async with app_served(service.app()) as origin:
        service.origin = origin
        yield service
