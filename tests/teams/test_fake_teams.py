"""The local Teams is checked against Microsoft's own client: the Microsoft 365 Agents SDK's connector client
(pointed at the fake's service URL) sends, updates and reads members through it, and what the fake posts to the bot
reads as the SDK's `Activity` and invoke models. What the SDK cannot be pointed at (its MSAL token client insists on
https and instance discovery) is checked with a plain form post."""

from __future__ import annotations

import aiohttp
import pytest
from microsoft_agents.activity import Activity, AdaptiveCardInvokeValue, Attachment
from microsoft_agents.hosting.core.connector.client import ConnectorClient
from microsoft_agents.hosting.core.connector.teams import TeamsConnectorClient

from .fake_teams import ALICE, APP_ID, APP_PASSWORD, CARD, CONVERSATION, FakeTeams, fake_teams

pytestmark = pytest.mark.anyio


async def token(fake: FakeTeams, secret: str = APP_PASSWORD) -> tuple[int, dict[str, object]]:
    form = {
        "grant_type": "client_credentials",
        "client_id": APP_ID,
        "client_secret": secret,
        "scope": "https://api.botframework.com/.default",
    }
    async with aiohttp.ClientSession() as session, session.post(fake.token_url, data=form) as response:
        return response.status, await response.json()


def card_activity(text: str) -> Activity:
    card = {"type": "AdaptiveCard", "version": "1.5", "body": [{"type": "TextBlock", "text": text}]}
    return Activity(type="message", attachments=[Attachment(content_type=CARD, content=card)])


async def test_the_token_endpoint_issues_a_bearer_token_for_client_credentials() -> None:
    async with fake_teams() as fake:
        status, body = await token(fake)
        assert status == 200
        assert body["token_type"] == "Bearer" and isinstance(body["expires_in"], int)


async def test_the_token_endpoint_refuses_a_wrong_secret() -> None:
    async with fake_teams() as fake:
        status, body = await token(fake, "wrong")
        assert (status, body["error"]) == (401, "invalid_client")


async def test_the_agents_sdk_posts_and_updates_a_card_through_the_fake() -> None:
    async with fake_teams() as fake:
        _, issued = await token(fake)
        client = ConnectorClient(fake.service_url, str(issued["access_token"]))
        try:
            sent = await client.conversations.send_to_conversation(CONVERSATION, card_activity("Deploy?"))
            assert sent.id and fake.card(sent.id)["body"][0]["text"] == "Deploy?"
            await client.conversations.update_activity(CONVERSATION, sent.id, card_activity("Answered"))
            assert fake.card(sent.id)["body"][0]["text"] == "Answered"
        finally:
            await client.close()


async def test_the_agents_sdk_reads_a_member_with_email_upn_and_object_id() -> None:
    async with fake_teams() as fake:
        _, issued = await token(fake)
        client = TeamsConnectorClient(fake.service_url, str(issued["access_token"]))
        try:
            member = await client.get_conversation_member(CONVERSATION, ALICE.id)
        finally:
            await client.close()
        assert (member.email, member.user_principal_name, member.aad_object_id) == (ALICE.email, ALICE.email, ALICE.aad)


async def test_the_fake_refuses_the_sdk_without_a_token_it_issued() -> None:
    async with fake_teams() as fake:
        client = ConnectorClient(fake.service_url, "not-issued")
        try:
            with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own error for a 401
                await client.conversations.send_to_conversation(CONVERSATION, card_activity("Deploy?"))
        finally:
            await client.close()
        assert [call.status for call in fake.calls] == [401]
        assert fake.activities == {}


async def test_what_the_fake_posts_to_the_bot_reads_as_the_sdks_activities() -> None:
    async with fake_teams() as fake:
        press = Activity.model_validate(fake.execute("1700000000001", ALICE, {"verb": "pick", "o": 1}))
        assert press.type == "invoke" and press.name == "adaptiveCard/action"
        value = AdaptiveCardInvokeValue.model_validate(press.value)
        assert value.action.verb == "pick" and value.action.data == {"verb": "pick", "o": 1}
        reply = Activity.model_validate(fake.reply("1700000000001", ALICE, "<at>handraise</at> 2"))
        assert reply.conversation.id.endswith(";messageid=1700000000001")
        assert reply.from_property.aad_object_id == ALICE.aad
        submit = Activity.model_validate(fake.submit("1700000000001", ALICE, {"verb": "pick", "o": 0}))
        assert submit.value == {"verb": "pick", "o": 0} and submit.reply_to_id == "1700000000001"
