"""The `[teams]` table: the bot's app registration (its id, password and tenant), where its keys and tokens come
from, and its subscriptions (a channel conversation, the service URL that reaches it, who may answer)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from bot.settings.tables import ChannelSettings, EnvName, Subscription, quote_value, shaped

_q = quote_value

BOT_FRAMEWORK_METADATA = "https://login.botframework.com/v1/.well-known/openidconfiguration"
TOKEN_URL = "https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token"
_URL = re.compile(r"https?://[^/\s?#]+(/[^\s]*)?")

TeamsResponder = Annotated[
    str,
    shaped(
        r"[^@\s]+@[^@\s]+\.[^@\s]+|@[^@\s]+\.[^@\s]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        "is not a Teams responder; write the person's email or sign-in name (UPN), their Microsoft Entra object id "
        '(e.g. "8c0f2b6e-1d2a-4c53-9e1f-2a3b4c5d6e7f"), or "@example.org" for everyone at a domain',
    ),
]


def _check_url(url: str, example: str) -> str:
    if not _URL.fullmatch(url):
        raise ValueError(f'{_q(url)} is not an http(s) URL; write e.g. "{example}"')
    return url


class TeamsSubscription(Subscription):
    """A Teams route: one channel conversation (`19:…@thread.tacv2`) and the service URL Teams gave for it
    (`handraise teams conversations` lists both once the bot has been added to the team)."""

    conversation: str = Field(min_length=3, max_length=400)
    service_url: str
    responders: list[TeamsResponder] = Field(default_factory=list)

    @field_validator("conversation")
    @classmethod
    def _check_conversation(cls, conversation: str) -> str:
        if not re.fullmatch(r"[^\s/?#]+", conversation):
            raise ValueError(
                f"{_q(conversation)} is not a conversation id; paste the id `handraise teams conversations` "
                'prints, e.g. "19:abc123@thread.tacv2"'
            )
        return conversation

    @field_validator("service_url")
    @classmethod
    def _check_service_url(cls, url: str) -> str:
        url = _check_url(url, "https://smba.trafficmanager.net/emea/")
        return url if url.endswith("/") else url + "/"


class TeamsSettings(ChannelSettings[TeamsSubscription]):
    """The Teams bot: activities arrive on serve's `/teams/messages`; replies go to each conversation's service URL."""

    app_id_env: EnvName = "TEAMS_APP_ID"
    app_password_env: EnvName = "TEAMS_APP_PASSWORD"
    tenant_id: str = Field(min_length=1, max_length=100)
    """The Microsoft Entra tenant the bot's app registration lives in (its id, or a domain of it)."""
    openid_metadata_url: str = BOT_FRAMEWORK_METADATA
    token_url: str | None = None
    """Where the bot's own token comes from; unset: Microsoft Entra's endpoint for `tenant_id`."""
    conversations_file: str = "teams-conversations.json"
    """Where the conversations the bot has been added to are kept, for `handraise teams conversations`."""

    @field_validator("tenant_id")
    @classmethod
    def _check_tenant(cls, tenant: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", tenant):
            raise ValueError(f"{_q(tenant)} is not a tenant; write its id (a GUID) or its domain")
        return tenant

    @field_validator("openid_metadata_url")
    @classmethod
    def _check_metadata(cls, url: str) -> str:
        return _check_url(url, BOT_FRAMEWORK_METADATA)

    @field_validator("token_url")
    @classmethod
    def _check_token_url(cls, url: str | None) -> str | None:
        return None if url is None else _check_url(url, TOKEN_URL.format(tenant_id="<tenant id>"))

    @property
    def token_endpoint(self) -> str:
        """The token URL as given, else Microsoft Entra's for the tenant."""
        return self.token_url or TOKEN_URL.format(tenant_id=self.tenant_id)
