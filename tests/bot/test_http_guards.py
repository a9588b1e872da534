"""Only our own host names and origins: rebinding Hosts, other sites' requests and non-JSON posts are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.api.guards import REMEMBERED_HOSTS, OwnHosts, host_name
from bot.config import parse_config
from bot.program import running as start_program

from .fakes import RecordingChannel
from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

ASK = {"questions": [{"id": "go", "question": "Deploy v2?"}]}


async def call(
    method: str, url: str, *, headers: dict[str, str] | None = None, **kwargs: Any
) -> tuple[int, str, dict[str, Any] | str]:
    async with aiohttp.ClientSession() as session, session.request(method, url, headers=headers, **kwargs) as reply:
        body = await reply.json() if reply.content_type == "application/json" else await reply.text()
        return reply.status, reply.content_type, body


def own(listen: str = "127.0.0.1:8765", public_url: str | None = None) -> OwnHosts:
    extra = f'public_url = "{public_url}"\n' if public_url else ""
    return OwnHosts(parse_config(f'[server]\nlisten = "{listen}"\n{extra}', environ={}).server)


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("[::1]:8765", "::1"),
        ("LocalHost.", "localhost"),
        ("evil.example:80", "evil.example"),
    ],
)
def test_host_name_drops_the_port_and_the_final_dot(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "127.0.0.2", "LOCALHOST"])
def test_loopback_names_are_ours(host: str) -> None:
    assert own().allows(host)


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.5"])
def test_other_names_are_not(host: str) -> None:
    assert not own().allows(host)


def test_host_answers_stay_the_same_when_asked_again_and_past_the_remembered_ones() -> None:
    hosts = own()
    invented = [f"n{index}.evil.example" for index in range(REMEMBERED_HOSTS * 2)]
    for _ in range(2):
        assert not any(hosts.allows(host) for host in invented)
        assert hosts.allows("localhost:8765") and hosts.allows("127.0.0.1:8765")
        assert not hosts.allows("evil.example:8765")


def test_the_public_urls_host_is_ours() -> None:
    hosts = own(public_url="https://handraise.example.org")
    assert hosts.allows("handraise.example.org")
    assert hosts.allows_origin("https://handraise.example.org", "handraise.example.org")
    assert not hosts.allows("example.org")


def test_listening_everywhere_admits_address_literals_but_not_other_names() -> None:
    hosts = OwnHosts(
        parse_config('[server]\nlisten = "0.0.0.0:8765"\napi_token_env = "T"\n', environ={"T": "x"}).server
    )
    assert hosts.allows("192.0.2.10:8765") and hosts.allows("[2001:db8::1]:8765")
    assert not hosts.allows("evil.example:8765")


def test_an_origin_is_ours_only_with_our_port() -> None:
    assert own().allows_origin("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert not own().allows_origin("http://127.0.0.1:9999", "127.0.0.1:8765")
    assert not own().allows_origin("null", "127.0.0.1:8765")


@pytest.mark.parametrize("path", ["/", "/healthz", "/v1/questions", "/openapi.json", "/static/inbox.css", "/nowhere"])
async def test_a_rebinding_host_is_refused_on_every_route(tmp_path: Path, path: str) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        status, kind, body = await call("GET", running.base_url + path, headers={"Host": "evil.example:8765"})
    assert (status, kind) == (421, "application/json")
    assert isinstance(body, dict) and body["error"]["code"] == "HOST_NOT_ALLOWED"


async def test_a_rebinding_host_cannot_ask_or_cancel(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        url = f"{running.base_url}/v1/questions"
        evil = {"Host": "evil.example"}
        assert (await call("POST", url, json=ASK, headers=evil))[0] == 421
        _, _, asked = await call("POST", url, json=ASK)
        assert isinstance(asked, dict)
        assert (await call("DELETE", f"{url}/{asked['id']}", headers=evil))[0] == 421
        record = await running.installation.store.get_question(asked["id"])
        assert await running.installation.store.count_questions() == 1
    assert record is not None and record.status == "pending"


async def test_the_public_urls_host_is_answered(tmp_path: Path) -> None:
    config = config_for(tmp_path, "")
    server = config.server.model_copy(update={"public_url": "https://handraise.example.org"})
    async with program(config.model_copy(update={"server": server})) as (running, _):
        status, _, _ = await call("GET", f"{running.base_url}/healthz", headers={"Host": "handraise.example.org"})
    assert status == 200


class SlackLike(RecordingChannel):
    def add_routes(self, app: web.Application) -> None:
        async def events(request: web.Request) -> web.Response:
            return web.Response(text="ok")

        app.router.add_post("/slack/events", events)


async def test_slack_events_answer_any_host_because_slack_signs_them(tmp_path: Path) -> None:
    async with start_program(config_for(tmp_path), channels=[SlackLike("slack")]) as started:
        status, _, body = await call("POST", f"{started.base_url}/slack/events", headers={"Host": "tunnel.example"})
    assert (status, body) == (200, "ok")


async def test_a_text_plain_post_is_refused_with_415(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        url = f"{running.base_url}/v1/questions"
        status, _, body = await call("POST", url, data='{"questions": [{"id": "a", "question": "b"}]}')
        assert await running.installation.store.count_questions() == 0
    assert status == 415
    assert body == {
        "error": {
            "code": "UNSUPPORTED_MEDIA_TYPE",
            "message": "POST /v1/questions needs the header 'Content-Type: application/json'",
        }
    }


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
async def test_another_sites_request_is_refused(tmp_path: Path, headers: dict[str, str]) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        status, _, body = await call("POST", f"{running.base_url}/v1/questions", json=ASK, headers=headers)
        listed, _, _ = await call("GET", f"{running.base_url}/v1/questions", headers=headers)
        assert await running.installation.store.count_questions() == 0
    assert isinstance(body, dict) and (status, body["error"]["code"]) == (403, "CROSS_SITE")
    assert listed == 403


async def test_our_own_origin_and_same_origin_fetches_are_served(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        headers = {"Origin": running.base_url, "Sec-Fetch-Site": "same-origin"}
        status, _, _ = await call("POST", f"{running.base_url}/v1/questions", json=ASK, headers=headers)
    assert status == 202


async def test_unknown_api_paths_and_methods_answer_in_json(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        missing = await call("GET", f"{running.base_url}/v1/answers")
        wrong = await call("PUT", f"{running.base_url}/v1/questions", json=ASK)
        async with aiohttp.ClientSession() as session, session.put(f"{running.base_url}/v1/questions", json=ASK) as r:
            allow = r.headers["Allow"]
    assert missing == (
        404,
        "application/json",
        {"error": {"code": "NOT_FOUND", "message": "there is no API endpoint /v1/answers; see /openapi.json"}},
    )
    assert wrong[:2] == (405, "application/json")
    assert isinstance(wrong[2], dict) and wrong[2]["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert allow == "GET, HEAD, POST"


async def test_a_bodiless_delete_needs_no_content_type(tmp_path: Path) -> None:
    async with program(config_for(tmp_path)) as (running, _):
        _, _, asked = await call("POST", f"{running.base_url}/v1/questions", json=ASK)
        assert isinstance(asked, dict)
        status, _, _ = await call("DELETE", f"{running.base_url}/v1/questions/{asked['id']}")
    assert status == 200
