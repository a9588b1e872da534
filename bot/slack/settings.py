"""The `[slack]` table: the Slack app (Socket Mode or HTTP events) and its subscriptions."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from bot.settings.tables import ChannelSettings, EnvName, FieldProblem, Subscription, quote_value, shaped

_q = quote_value

_NOT_A_USER_ID = 'is not a Slack user id; names change, so write ids like "U0123ABCD" (profile → ⋮ → Copy member ID)'
SlackUserId = Annotated[str, shaped(r"[UW][A-Z0-9]{2,}", _NOT_A_USER_ID)]
SlackResponder = Annotated[str, shaped(r"[UWS][A-Z0-9]{2,}", _NOT_A_USER_ID + ' or usergroup ids like "S0123ABCD"')]
SlackDestination = Annotated[
    str, shaped(r"[CG][A-Z0-9]{2,}|#[^\s#]+", 'is not a channel; write its id ("C0123ABCD") or name ("#deploys")')
]


class SlackSubscription(Subscription):
    """A Slack route: post to a channel, or as a DM to a user, in one thread per agent or per request."""

    channel: SlackDestination | None = None
    user: SlackUserId | None = None
    thread: Literal["agent", "request"] = "agent"
    mention: list[SlackResponder] = Field(default_factory=list)
    responders: list[SlackResponder] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_destination(self) -> SlackSubscription:
        if self.channel is None and self.user is None:
            raise ValueError('give a destination: channel = "#deploys" or user = "U0123"')
        if self.channel is not None and self.user is not None:
            raise ValueError('give one destination, not both: channel = "#deploys" or user = "U0123"')
        return self


class SlackSettings(ChannelSettings[SlackSubscription]):
    """The Slack app: Socket Mode (no public URL) or HTTP events (signed requests)."""

    mode: Literal["socket", "http"] = "http"
    bot_token_env: EnvName = "SLACK_BOT_TOKEN"
    app_token_env: EnvName | None = None
    signing_secret_env: EnvName | None = "SLACK_SIGNING_SECRET"
    api_url: str = "https://slack.com/api/"

    @field_validator("api_url")
    @classmethod
    def _check_api_url(cls, api_url: str) -> str:
        if not re.match(r"https?://[^/\s]+", api_url):
            raise ValueError(f'{_q(api_url)} is not an http(s) URL; write e.g. "https://slack.com/api/"')
        return api_url if api_url.endswith("/") else api_url + "/"  # the Slack SDK joins method names onto it

    @model_validator(mode="after")
    def _check_mode_secrets(self) -> SlackSettings:
        if self.mode == "socket" and self.app_token_env is None:
            raise FieldProblem(
                'required when mode = "socket"; set app_token_env = "SLACK_APP_TOKEN" and export the xapp- token',
                "app_token_env",
            )
        if self.mode == "http" and self.signing_secret_env is None:
            raise FieldProblem(
                'required when mode = "http", to verify that requests come from Slack; '
                'set signing_secret_env = "SLACK_SIGNING_SECRET" and export it',
                "signing_secret_env",
            )
        return self
