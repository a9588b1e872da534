"""The `[web]` table: the local inbox, on by default so that a bot with no config still answers every question."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, model_validator

from bot.settings.durations import Duration
from bot.settings.tables import ChannelSettings, EnvName, FieldProblem, Subscription
from bot.web.push_settings import PushSettings
from bot.web.sign_in_settings import SignInSettings


class WebSubscription(Subscription):
    """A web inbox route: the inbox shows the request to the listed responders (everyone when empty)."""


class WebSettings(ChannelSettings[WebSubscription]):
    """The local web inbox, on by default so that a bot with no config still answers every question."""

    responders: list[str] = Field(default_factory=list)
    sign_in: SignInSettings | None = None
    """`[web.sign_in]`: people sign in with the company's OpenID Connect provider; without it, the token link."""
    session_secret_env: EnvName | None = None
    """The variable holding the key that signs session cookies; replicas sharing it share sessions."""
    session_lifetime: Duration = timedelta(hours=12)
    push: PushSettings | None = None
    """`[web.push]`: new questions pushed to signed-in people's devices; needs `[web.sign_in]` (a push goes to a
    person)."""

    @property
    def pushes(self) -> bool:
        return self.push is not None and self.push.enabled

    @model_validator(mode="after")
    def _check_push_has_people(self) -> WebSettings:
        if self.pushes and self.sign_in is None:
            raise FieldProblem(
                "Web Push needs [web.sign_in]: a notification goes to a signed-in person; add [web.sign_in] or "
                "remove [web.push]",
                "push",
            )
        return self

    @model_validator(mode="after")
    def _check_approvals_have_people(self) -> WebSettings:
        # With no responders nobody says who they are in the inbox, so every approval is the same one: k > 1 could
        # never be reached and the question would wait for ever.
        if self.sign_in is not None:
            return self  # signed in, people are told apart by their email
        for index, subscription in enumerate(self.subscriptions):
            if subscription.approvals > 1 and not (subscription.responders or self.responders):
                raise FieldProblem(
                    f"{subscription.approvals} approvals need {subscription.approvals} different people, and the "
                    "inbox tells people apart only by its responders; list them in responders (here or in [web])",
                    "subscriptions",
                    index,
                    "approvals",
                )
        return self
