"""The VAPID key pair (RFC 8292): made on first start and kept in the store under `web.push.vapid`, so the public
key browsers subscribed with (`k=`) stays the same after a restart and on every replica. py-vapid does the ES256
signing; nothing here is hand-made cryptography.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

from bot.store.interface import AsyncStore

if TYPE_CHECKING:
    from py_vapid import Vapid02

KEPT_NAME = "web.push.vapid"
JWT_LIFETIME_SECONDS = 12 * 3600
"""How far ahead a JWT's `exp` is (RFC 8292 allows at most 24 hours)."""
JWT_REUSED_SECONDS = 3600
"""A signed JWT is reused for an origin this long: signing once per push would cost for nothing."""


class VapidKeyError(ValueError):
    """The kept value is not a key this server made (the store was edited by hand)."""


class VapidKeys:
    """The server's VAPID key pair: its public key for the browsers, `Authorization` headers for push services."""

    def __init__(self, kept: str, subject: str) -> None:
        """`kept` is the private key as the store keeps it (base64url DER). Raises VapidKeyError when it is not one."""
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives.asymmetric import ec
        from py_vapid import Vapid02

        try:
            self._vapid: Vapid02 = Vapid02.from_der(kept.encode("ascii"))
        except (ValueError, TypeError, UnicodeEncodeError, UnsupportedAlgorithm) as bad:
            raise VapidKeyError(f"the VAPID key kept as {KEPT_NAME} cannot be read ({bad})") from None
        private = self._vapid.private_key
        if not isinstance(private, ec.EllipticCurvePrivateKey) or not isinstance(private.curve, ec.SECP256R1):
            raise VapidKeyError(f"the key kept as {KEPT_NAME} is not a P-256 key; remove it and restart")
        self.subject = subject
        self.public_key = _public_key(self._vapid)
        """The application server key: the uncompressed P-256 point, base64url, as `PushManager.subscribe` takes it."""
        self._signed: dict[str, tuple[str, float]] = {}
        self.secret = hmac.new(kept.encode("ascii"), b"handraise web push secret v1", hashlib.sha256).digest()
        """A key for the server's own signatures (answer tokens), derived from the kept one: the same everywhere."""

    def authorization(self, audience: str, now: float | None = None) -> str:
        """The `Authorization: vapid t=<JWT>, k=<key>` value for the push service at origin `audience`."""
        now = time.time() if now is None else now
        cached = self._signed.get(audience)
        if cached is not None and cached[1] > now:
            return cached[0]
        claims = {"aud": audience, "exp": int(now) + JWT_LIFETIME_SECONDS, "sub": self.subject}
        header = str(self._vapid.sign(claims)["Authorization"])
        if len(self._signed) > 1000:  # a handful of push services in practice
            self._signed.clear()
        self._signed[audience] = (header, now + JWT_REUSED_SECONDS)
        return header


def new_private_key() -> str:
    """A fresh key pair's private half, as the store keeps it."""
    from cryptography.hazmat.primitives import serialization
    from py_vapid import Vapid02, b64urlencode

    vapid = Vapid02()
    vapid.generate_keys()
    der = vapid.private_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return b64urlencode(der)


async def kept_keys(store: AsyncStore, subject: str) -> VapidKeys:
    """The key pair kept in `store`, made and kept first when there is none (the first replica to keep one wins)."""
    kept = await store.keep_value(KEPT_NAME, new_private_key())
    return VapidKeys(kept, subject)


def _public_key(vapid: Vapid02) -> str:
    from cryptography.hazmat.primitives import serialization
    from py_vapid import b64urlencode

    public = vapid.public_key
    if public is None:
        raise VapidKeyError("the VAPID key pair has no public key")
    point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return b64urlencode(point)
