"""The browser's `PushSubscription.toJSON()`, as the page posts it: read and checked before anything is stored.

The endpoint must be https (a push service), or http on this machine's loopback (a push service on the same host,
as the tests run one): any other http endpoint would send questions in the clear, and a private address would let
the page make this server post to the inside of its network. The keys must be a P-256 public key (65 bytes, a
point on the curve) and a 16-byte auth secret, as RFC 8291 defines them.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bot.web.push.encryption import unb64

MAX_BODY = 4096
"""A real subscription is well under 1 KB; more is not one."""
MAX_ENDPOINT = 2048
LOOPBACK_NAMES = frozenset({"localhost"})


class BadSubscription(ValueError):
    """The body is not a push subscription this server accepts; the message says why (and `status` is 400)."""

    status = 400


@dataclass(frozen=True)
class DeviceKeys:
    """One browser's subscription: where to push, and its keys."""

    endpoint: str
    p256dh: str
    auth: str


def parse_subscription(raw: bytes) -> DeviceKeys:
    """The subscription in the JSON body `raw`. Raises BadSubscription."""
    body = _json_object(raw)
    endpoint = check_endpoint(body.get("endpoint"))
    keys = body.get("keys")
    if not isinstance(keys, dict):
        raise BadSubscription('the subscription has no "keys" object; send PushSubscription.toJSON()')
    p256dh, auth = keys.get("p256dh"), keys.get("auth")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(p256dh, str) or not isinstance(auth, str):
        raise BadSubscription('the subscription\'s keys need "p256dh" and "auth" strings')
    _check_p256dh(p256dh)
    if len(auth) > 64 or len(_decoded(auth, "auth")) != 16:
        raise BadSubscription("keys.auth is not a 16-byte secret (base64url)")
    expiration = body.get("expirationTime")
    if expiration is not None and not isinstance(expiration, int | float):
        raise BadSubscription("expirationTime must be null or a number")
    return DeviceKeys(endpoint, p256dh, auth)


def parse_endpoint(raw: bytes) -> str:
    """The `{"endpoint": …}` body of an unsubscribe. Raises BadSubscription."""
    return check_endpoint(_json_object(raw).get("endpoint"))


def check_endpoint(endpoint: object) -> str:
    if not isinstance(endpoint, str) or not endpoint:
        raise BadSubscription('the body needs an "endpoint" string')
    if len(endpoint) > MAX_ENDPOINT or not endpoint.isascii() or any(ch.isspace() for ch in endpoint):
        raise BadSubscription("the endpoint is not a URL a push service gives")
    parts = urlsplit(endpoint)
    try:
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        raise BadSubscription("the endpoint is not a URL a push service gives") from None
    if parts.username is not None or parts.password is not None or not host:
        raise BadSubscription("the endpoint is not a URL a push service gives")
    if parts.scheme == "https" or (parts.scheme == "http" and _loopback(host)):
        return endpoint
    raise BadSubscription("the endpoint must be an https:// URL (http:// only for a push service on this machine)")


def _loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadSubscription("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadSubscription("the body must be a JSON object")
    return body  # pyright: ignore[reportUnknownVariableType]


def _decoded(text: str, name: str) -> bytes:
    try:
        return unb64(text)
    except ValueError:
        raise BadSubscription(f"keys.{name} is not base64url") from None


def _check_p256dh(p256dh: str) -> None:
    if len(p256dh) > 128:
        raise BadSubscription("keys.p256dh is not a P-256 public key")
    point = _decoded(p256dh, "p256dh")
    if len(point) != 65 or point[0] != 4:
        raise BadSubscription("keys.p256dh is not an uncompressed P-256 public key (65 bytes)")
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError:
        raise BadSubscription("keys.p256dh is not a point on the P-256 curve") from None
