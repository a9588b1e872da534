"""Channels as registered kinds: one description per channel, checked loudly at registration, looped over by the
config, the router and install. A fourth channel is one package plus one line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from bot.channels.base import Channel, Sent
from bot.channels.kind import BuildContext, ChannelKind, KindError, KindRegistry, Secret
from bot.config import required_environment
from bot.installation import build_channels
from bot.kinds import KINDS
from bot.questions.routing import Route, Router
from bot.settings.tables import ChannelSettings, Subscription
from bot.store.records import AgentRef, QuestionRecord

from .fakes import make_ledger


class FaxSubscription(Subscription):
    number: str


class FaxSettings(ChannelSettings[FaxSubscription]):
    token_env: str = "FAX_TOKEN"


class HalfWiredSettings(ChannelSettings[Any]):
    """Forgot to say which subscriptions it has: its routes would never reach the router."""


class FaxChannel(Channel):
    name = "fax"

    def __init__(self, settings: FaxSettings) -> None:
        super().__init__()
        self.settings = settings

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        return Sent(key=question.id)


def fax_secrets(settings: FaxSettings) -> Iterator[Secret]:
    yield ("token_env",), settings.token_env


def build_fax(settings: FaxSettings, context: BuildContext) -> Channel:
    return FaxChannel(settings)


def fax(**changes: Any) -> ChannelKind[Any]:
    fields: dict[str, Any] = {"name": "fax", "title": "fax", "settings": FaxSettings}
    fields |= {"secrets": fax_secrets, "build": build_fax}
    return ChannelKind(**(fields | changes))


FAX_CONFIG = {"fax": {"subscriptions": [{"agents": ["deploy-*"], "number": "+1 555 0100"}]}}


def test_the_registry_lists_slack_telegram_teams_discord_ntfy_email_and_web_in_waterfall_order() -> None:
    assert KINDS.names == ("slack", "telegram", "teams", "discord", "ntfy", "email", "web")


def test_another_kind_gets_its_own_config_table() -> None:
    config = KindRegistry(*KINDS, fax()).config_model().model_validate(FAX_CONFIG)
    settings = config.channel("fax")
    assert isinstance(settings, FaxSettings) and settings.subscriptions[0].number == "+1 555 0100"
    assert config.answerers == ["web", "fax"]


def test_a_fourth_kind_is_routed_by_its_own_subscriptions() -> None:
    config = KindRegistry(*KINDS, fax()).config_model().model_validate(FAX_CONFIG)
    router = Router.from_config(config)
    assert [route.channel for route in router.routes(AgentRef(id="deploy-1"))] == ["web", "fax"]
    assert [route.channel for route in router.routes(AgentRef(id="build-1"))] == ["web"]


def test_a_fourth_kind_is_built_by_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = KindRegistry(*KINDS, fax())
    monkeypatch.setattr(sys.modules["bot.installation"], "KINDS", registry)
    config = registry.config_model().model_validate(FAX_CONFIG | {"bot": {"answerers": ["fax"]}})
    ledger, _ = make_ledger(tmp_path)
    (channel,) = build_channels(config, ledger)
    assert isinstance(channel, FaxChannel)


def test_a_kind_whose_settings_declare_no_subscriptions_fails_at_registration() -> None:
    with pytest.raises(KindError, match="must declare `subscriptions: list"):
        KindRegistry(fax(settings=HalfWiredSettings))


def test_a_kind_without_a_build_fails_at_registration() -> None:
    with pytest.raises(KindError, match="build must be a function"):
        KindRegistry(fax(build=None))


def test_a_kind_without_secrets_fails_at_registration() -> None:
    with pytest.raises(KindError, match="secrets must be a function"):
        KindRegistry(fax(secrets=None))


def test_a_kind_with_settings_that_are_not_a_channel_table_fails_at_registration() -> None:
    with pytest.raises(KindError, match="settings must be a ChannelSettings model"):
        KindRegistry(fax(settings=FaxSubscription))


@pytest.mark.parametrize("name", ["", "Fax", "server", "bot", "api", "fax machine"])
def test_a_kind_with_an_unusable_name_fails_at_registration(name: str) -> None:
    with pytest.raises(KindError, match="the name must be"):
        KindRegistry(fax(name=name))


def test_a_kind_registered_twice_fails() -> None:
    with pytest.raises(KindError, match="registered twice") as raised:
        KindRegistry(fax(), fax())
    assert raised.value.code == "BAD_CHANNEL_KIND"


def test_a_kind_on_by_default_needs_settings_that_work_without_keys() -> None:
    class Needy(ChannelSettings[FaxSubscription]):
        address: str = Field(min_length=1)

    with pytest.raises(KindError, match="on_by_default"):
        KindRegistry(fax(settings=Needy, on_by_default=True))


def test_a_channel_the_router_has_no_subscriptions_for_takes_nothing() -> None:
    router = Router(["fax", "web"], {"web": []})
    assert router.route("fax", None) is None
    assert [route.channel for route in router.routes(None)] == ["web"]


def test_the_config_checks_the_secrets_a_registered_kind_lists() -> None:
    registry = KindRegistry(*KINDS, fax())
    config = registry.config_model().model_validate(FAX_CONFIG)
    assert (("fax", "token_env"), "FAX_TOKEN") in list(required_environment(config, registry))
