"""ntfy end to end through `serve`: an agent asks over the HTTP API, the question is published to the stand-in ntfy,
a tap on the phone (the stand-in sending the action's request) answers it once, and the agent reads the answer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import anyio
import pytest

from bot.config import parse_config
from bot.program import running
from bot.settings.errors import ConfigError
from tests.bot.program_rig import free_port

from .fake_ntfy import TOKEN, FakeNtfy, fake_ntfy

pytestmark = pytest.mark.anyio

AGENT = {"id": "deploy-7", "name": "deploy-bot"}
TOPIC = "handraise-test-3f9c2a7e"
PERSON = "alice@example.org"


def config_text(tmp_path: Path, port: int, server: str, *, public_url: bool = True, extra: str = "") -> str:
    public = f'public_url = "http://127.0.0.1:{port}"\n' if public_url else ""
    return (
        f'[server]\nlisten = "127.0.0.1:{port}"\n{public}[store]\npath = "{tmp_path / "handraise.db"}"\n'
        f'[ntfy]\nserver = "{server}"\n[[ntfy.subscriptions]]\nagents = ["*"]\ntopic = "{TOPIC}"\n'
        f'person = "{PERSON}"\n{extra}'
    )


class Agent:
    def __init__(self, http: aiohttp.ClientSession, fake: FakeNtfy, base: str, inbox: str) -> None:
        self.http, self.fake, self.base, self.inbox = http, fake, base, inbox

    async def ask(self, *questions: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Ask; returns the question's id and the ntfy message that asks it."""
        count = len(self.fake.published)
        async with self.http.post("/v1/questions", json={"questions": list(questions), "agent": AGENT}) as reply:
            assert reply.status == 202, await reply.text()
            question_id = (await reply.json())["id"]
        return question_id, await self.fake.until(count + 1)

    async def outcome(self, question_id: str, wait: int = 10) -> dict[str, Any]:
        async with self.http.get(f"/v1/questions/{question_id}?wait={wait}") as reply:
            return await reply.json()


@asynccontextmanager
async def serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "", *, port: int | None = None
) -> AsyncIterator[Agent]:
    monkeypatch.setenv("NTFY_TOKEN", TOKEN)
    port = port or free_port()
    async with fake_ntfy() as fake:
        config = parse_config(config_text(tmp_path, port, fake.url, extra=extra), environ={"NTFY_TOKEN": TOKEN})
        async with running(config) as started, aiohttp.ClientSession(started.base_url) as http:
            inbox = parse_qs(urlsplit(started.links["web inbox"]).query)["token"][0]
            yield Agent(http, fake, started.base_url, inbox)
        assert fake.problems == []


def question(text: str = "Deploy to production?", options: list[str] | None = None, **more: Any) -> dict[str, Any]:
    chosen = ["Yes", "No"] if options is None else options
    return {"id": "q1", "question": text, "options": [{"label": label} for label in chosen]} | more


async def test_a_question_is_published_once_as_ntfy_json_with_its_options_as_http_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(question(options=["Ship it", "Wait, *not yet*", "Roll back"]))
        assert agent.fake.authorizations == [f"Bearer {TOKEN}"]
        assert message["topic"] == TOPIC
        assert message["message"] == "Deploy to production?"
        assert message["title"] == "deploy-bot asks"
        assert "markdown" not in message
        assert message["click"] == f"{agent.base}/#card-{question_id}"
        assert [action["label"] for action in message["actions"]] == ["Ship it", "Wait, *not yet*", "Roll back"]
        for action in message["actions"]:
            assert action["action"] == "http" and action["method"] == "POST"
            assert action["url"] == f"{agent.base}/ntfy/taps"
        assert len({action["body"] for action in message["actions"]}) == 3
        assert (await agent.outcome(question_id, wait=0))["status"] == "pending"
        assert len(agent.fake.published) == 1
    assert TOKEN not in caplog.text


async def test_a_tap_answers_once_and_a_replay_or_a_late_tap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(question())
        status, text = await agent.fake.tap(message, "Yes")
        assert status == 200, text
        outcome = await agent.outcome(question_id)
        assert outcome["status"] == "answered"
        assert outcome["answer"] == {"answers": [{"id": "q1", "selected": ["Yes"]}]}
        assert outcome["resolvedBy"] == PERSON and outcome["resolvedVia"] == "ntfy"

        assert (await agent.fake.tap(message, "Yes"))[0] == 409  # the same token again
        status, text = await agent.fake.tap(message, "No")  # a fresh token, but the question is over
        assert status == 409 and PERSON in text
        assert (await agent.outcome(question_id))["answer"]["answers"][0]["selected"] == ["Yes"]
        follow_up = await agent.fake.until(2)
        assert follow_up["topic"] == TOPIC and not follow_up["actions"]
        assert PERSON in follow_up["title"] and follow_up["message"] == "Deploy to production?"


async def test_a_tampered_or_forged_token_is_refused_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(question())
        yes = next(action for action in message["actions"] if action["label"] == "Yes")["body"]
        token = yes.split('"')[3]
        payload, signature = token.split(".")
        flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
        for body in (
            f'{{"tap":"{flipped}.{signature}"}}',
            f'{{"tap":"{payload}.{signature[:-2]}AA"}}',
            '{"tap":"e30.AAAA"}',
            '{"tap":"' + "A" * 5000 + '"}',
        ):
            status, _ = await agent.fake.tap(message, "No", body=body)
            assert status in (403, 413), body[:80]
        for garbage in ("", "not json", "[]", '{"tap": 7}', "\x00\xff"):
            assert (await agent.fake.tap(message, "No", body=garbage))[0] == 400
        assert (await agent.outcome(question_id, wait=0))["status"] == "pending"
        assert (await agent.fake.tap(message, "No"))[0] == 200
        assert (await agent.outcome(question_id))["answer"]["answers"][0]["selected"] == ["No"]


async def test_a_tap_after_the_question_was_cancelled_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(question())
        async with agent.http.delete(f"/v1/questions/{question_id}") as reply:
            assert reply.status < 300, await reply.text()
        follow_up = await agent.fake.until(2)
        assert "Cancelled" in follow_up["title"] and not follow_up["actions"]
        status, text = await agent.fake.tap(message, "Yes")
        assert status == 409 and "cancelled" in text
        assert (await agent.outcome(question_id))["status"] == "cancelled"


@pytest.mark.parametrize(
    "asked",
    [
        [question(options=["a", "b", "c", "d"])],
        [question(options=[])],
        [question(), question("And the database?") | {"id": "q2"}],
        [question(multiSelect=True)],
    ],
    ids=["four-options", "free-text", "two-questions", "multi-select"],
)
async def test_what_one_tap_cannot_answer_gets_one_view_action_to_the_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[dict[str, Any]]
) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(*asked)
        (action,) = message["actions"]
        assert action["action"] == "view" and action["url"] == f"{agent.base}/#card-{question_id}"
        assert message["message"].startswith(asked[0]["question"].join(("", "")) if len(asked) == 1 else "1) ")
        for option in asked[0].get("options") or []:
            assert option["label"] in message["message"]


async def test_hostile_text_is_kept_verbatim_and_within_ntfys_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Control characters other than tab and line breaks are refused by the API itself (tests/ntfy/test_render.py
    # shows that the rendering would keep them too).
    start = "**bold** [link](https://evil.example)\t\u200b\u202e <script>x</script>\r\n# heading 🚀 "
    text = start + "🚀" * (1990 - len(start))  # within the API's 2,000 characters, ~8 KB of UTF-8
    async with serving(tmp_path, monkeypatch) as agent:
        _, message = await agent.ask(question(text, options=["\u202eevil label", "*ok* `x` <b>"]))
        assert len(message["message"].encode("utf-8")) <= 4096
        assert message["message"].startswith(start) and message["message"].endswith("…")
        assert "markdown" not in message
        assert [action["label"] for action in message["actions"]] == ["\u202eevil label", "*ok* `x` <b>"]


async def test_without_public_url_serve_stops_at_load_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NTFY_TOKEN", TOKEN)
    text = config_text(tmp_path, free_port(), "https://ntfy.example", public_url=False)
    config = parse_config(text, environ={"NTFY_TOKEN": TOKEN})
    with pytest.raises(ConfigError) as refused:
        async with running(config):
            pass
    assert "public_url" in str(refused.value) and "\n" not in str(refused.value)


async def test_a_publish_ntfy_refuses_fails_the_question_with_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        agent.fake.status = 403
        async with agent.http.post("/v1/questions", json={"questions": [question()], "agent": AGENT}) as reply:
            question_id = (await reply.json())["id"]
        outcome = await agent.outcome(question_id)
        assert outcome["status"] == "failed"
        assert "write access" in str(outcome) and TOKEN not in str(outcome)


async def test_a_responder_list_without_the_topics_person_refuses_the_tap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch, 'responders = ["bob@example.org"]\n') as agent:
        question_id, message = await agent.ask(question())
        assert (await agent.fake.tap(message, "Yes"))[0] == 403
        assert (await agent.outcome(question_id, wait=0))["status"] == "pending"


async def test_with_escalation_the_question_is_also_on_its_inbox_page_and_a_tap_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `view` action and the click open the question's card in the web inbox: it is there once the ntfy route
    escalates to the inbox (docs/ntfy.md), and the first answer from either wins."""
    async with serving(tmp_path, monkeypatch, 'escalate_after = "1s"\n') as agent:
        question_id, message = await agent.ask(question(options=["a", "b", "c", "d"]))
        card = f"/questions/{question_id}/card"
        headers = {"Authorization": f"Bearer {agent.inbox}"}
        with anyio.fail_after(10):
            while True:
                async with agent.http.get(card, headers=headers) as reply:
                    if reply.status == 200:
                        break
                await anyio.sleep(0.05)
        assert message["actions"][0]["url"].endswith(f"#card-{question_id}")


async def test_two_taps_at_once_answer_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(tmp_path, monkeypatch) as agent:
        question_id, message = await agent.ask(question())
        statuses: list[int] = []

        async def tap(label: str) -> None:
            statuses.append((await agent.fake.tap(message, label))[0])

        async with anyio.create_task_group() as taps:
            taps.start_soon(tap, "Yes")
            taps.start_soon(tap, "No")
        assert sorted(statuses) == [200, 409]
        outcome = await agent.outcome(question_id)
        assert outcome["status"] == "answered" and len(outcome["answer"]["answers"]) == 1


async def test_after_a_restart_a_used_button_stays_used_and_the_others_still_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    async with serving(tmp_path, monkeypatch, 'responders = ["bob@example.org"]\n', port=port) as agent:
        question_id, message = await agent.ask(question())
        assert (await agent.fake.tap(message, "No"))[0] == 403  # Alice may not answer: the button is spent
    async with serving(tmp_path, monkeypatch, port=port) as agent:  # now anyone may
        assert agent.fake.published == []  # the question is not published again
        status, text = await agent.fake.tap(message, "No")
        assert status == 409 and "already used" in text
        assert (await agent.outcome(question_id, wait=0))["status"] == "pending"
        assert (await agent.fake.tap(message, "Yes"))[0] == 200
        assert (await agent.outcome(question_id))["answer"]["answers"][0]["selected"] == ["Yes"]


async def test_a_reminder_is_published_with_its_own_taps_and_the_first_tap_from_either_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch, 'remind_every = "1s"\nremind_max = 1\n') as agent:
        question_id, message = await agent.ask(question())
        reminder = await agent.fake.until(2)
        assert reminder["title"] == "Reminder 1: deploy-bot asks" and reminder["message"] == "Deploy to production?"
        assert [action["label"] for action in reminder["actions"]] == ["Yes", "No"]
        status, text = await agent.fake.tap(reminder, "No")
        assert status == 200, text
        outcome = await agent.outcome(question_id)
        assert outcome["answer"] == {"answers": [{"id": "q1", "selected": ["No"]}]}
        assert (await agent.fake.tap(message, "Yes"))[0] == 409  # the first notification's button, too late
        follow_up = await agent.fake.until(3)
        assert follow_up["title"].startswith("Answered by") and not follow_up["actions"]
        await anyio.sleep(1.2)
        assert len(agent.fake.published) == 3  # remind_max = 1, and never a reminder once it is over


async def test_approval_progress_is_published_and_the_question_waits_for_the_next_approver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch, "approvals = 2\n") as agent:
        question_id, message = await agent.ask(question("Ship the plan?", ["Approve", "Deny"]))
        status, text = await agent.fake.tap(message, "Approve")
        assert status == 200, text
        progress = await agent.fake.until(2)
        assert progress["title"] == f"1 of 2 approvals: {PERSON} — waiting for more"
        assert progress["message"] == "Ship the plan?" and not progress["actions"]
        pending = await agent.outcome(question_id, wait=0)
        assert pending["status"] == "pending" and pending["approvedBy"] == [PERSON]
