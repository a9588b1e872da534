"""The signed-in session, kept whole in a cookie signed with the session secret (itsdangerous): any replica holding
the same secret accepts it whatever store it has, and one with another secret does not. Nothing of it is stored."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer

from bot.web.oidc import Attempt

SESSION_COOKIE = "handraise_session"
FLOW_COOKIE = "handraise_sign_in"
"""Names without the port: a browser sends a cookie to every port of a host, so replicas behind one name share it."""
FLOW_LIFETIME = timedelta(minutes=10)
"""How long a person may take at the provider's sign-in page."""


class Sessions:
    """Issues and reads the session and sign-in-flow cookies' values, signed with `secret`."""

    def __init__(self, secret: str, lifetime: timedelta) -> None:
        if not secret:
            raise ValueError("the session secret must not be empty")
        self.lifetime = lifetime
        self._sessions = URLSafeTimedSerializer(secret, salt="handraise inbox session")
        self._flows = URLSafeTimedSerializer(secret, salt="handraise sign-in flow")
        self._csrf_key = hmac.new(secret.encode(), b"handraise inbox csrf", hashlib.sha256).digest()

    def issue(self, email: str) -> str:
        return self._sessions.dumps({"email": email})

    def email(self, value: str | None) -> str | None:
        """The signed-in email in a session cookie's `value`; None when absent, forged, tampered with or expired."""
        data = _loads(self._sessions, value, self.lifetime)
        email = data.get("email") if data else None
        return email if isinstance(email, str) else None

    def start(self, attempt: Attempt, back_to: str) -> str:
        return self._flows.dumps({"s": attempt.state, "n": attempt.nonce, "v": attempt.verifier, "b": back_to})

    def attempt(self, value: str | None) -> tuple[Attempt, str] | None:
        """The sign-in under way in this browser (and where it was going), or None."""
        data = _loads(self._flows, value, FLOW_LIFETIME)
        if data is None:
            return None
        fields = (data.get("s"), data.get("n"), data.get("v"), data.get("b"))
        if not all(isinstance(field, str) for field in fields):
            return None
        state, nonce, verifier, back_to = (str(field) for field in fields)
        return Attempt(state, nonce, verifier), back_to

    def csrf(self, email: str) -> str:
        """The forms' CSRF token for `email`: a page of one person's session cannot be posted for another's."""
        return hmac.new(self._csrf_key, email.encode(), hashlib.sha256).hexdigest()


def _loads(serializer: URLSafeTimedSerializer, value: str | None, max_age: timedelta) -> dict[str, Any] | None:
    if not value or len(value) > 4096:
        return None
    try:
        data = serializer.loads(value, max_age=int(max_age.total_seconds()))
    except BadData:
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]
