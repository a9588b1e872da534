"""A payload encrypted for one device (RFC 8291, `Content-Encoding: aes128gcm`, one record): http_ece does the
work with a fresh ephemeral key per message, as the RFC asks; nothing here is hand-made cryptography."""

from __future__ import annotations

import base64

RECORD_SIZE = 4096
"""The record size the header declares; push services accept bodies up to 4,096 bytes (RFC 8030 section 7.2)."""
HEADER_BYTES = 16 + 4 + 1 + 65
"""salt, record size, key id length, and the key id (the sender's ephemeral public key, an uncompressed point)."""
MAX_PLAINTEXT = RECORD_SIZE - HEADER_BYTES - 1 - 16
"""What fits in one record within 4,096 bytes: less the padding delimiter and the AES-GCM tag (3,993 bytes)."""


class PayloadTooLarge(ValueError):
    """A payload longer than one record can carry (`notification` trims what it pushes to fit)."""


def unb64(text: str) -> bytes:
    """base64url with or without its padding, as browsers give subscription keys; raises ValueError otherwise."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encrypt(payload: bytes, p256dh: bytes, auth: bytes) -> bytes:
    """`payload` as the body of a push to the device whose subscription keys are `p256dh` and `auth`."""
    if len(payload) > MAX_PLAINTEXT:
        raise PayloadTooLarge(f"{len(payload)} bytes do not fit one push record ({MAX_PLAINTEXT} at most)")
    import http_ece
    from cryptography.hazmat.primitives.asymmetric import ec

    ephemeral = ec.generate_private_key(ec.SECP256R1())
    body: bytes = http_ece.encrypt(
        payload, private_key=ephemeral, dh=p256dh, auth_secret=auth, version="aes128gcm", rs=RECORD_SIZE
    )
    return body
