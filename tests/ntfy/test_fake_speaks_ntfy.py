"""The stand-in accepts ntfy's own documented examples and refuses what ntfy refuses, so that a publish it accepts
is one ntfy accepts."""

from __future__ import annotations

from typing import Any

import pytest

from .fake_ntfy import problems_in

DOCUMENTED = {  # https://docs.ntfy.sh/publish/#publish-as-json
    "topic": "mytopic",
    "message": "Disk space is low at 5.1 GB",
    "title": "Low disk space alert",
    "tags": ["warning", "cd"],
    "priority": 4,
    "attach": "https://filesrv.lan/space.jpg",
    "filename": "diskspace.jpg",
    "click": "https://homecamera.lan/xasds1h2xsSsa/",
    "actions": [{"action": "view", "label": "Admin panel", "url": "https://filesrv.lan/admin"}],
}
DOCUMENTED_HTTP = {  # https://docs.ntfy.sh/publish/#send-http-request
    "topic": "myhome",
    "message": "Garage door has been open for 15 minutes. Close it?",
    "actions": [
        {
            "action": "http",
            "label": "Close door",
            "url": "https://api.mygarage.lan/",
            "method": "PUT",
            "headers": {"Authorization": "Bearer zAzsx1sk.."},
            "body": '{"action": "close"}',
        }
    ],
}


@pytest.mark.parametrize("example", [DOCUMENTED, DOCUMENTED_HTTP, {"topic": "t"}])
def test_the_documented_examples_pass(example: dict[str, Any]) -> None:
    assert problems_in(example) == []


VIEW = {"action": "view", "label": "x", "url": "https://a.example"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"message": "no topic"}, "'topic' is missing"),
        ({"topic": "a/b"}, "'topic' is missing"),
        ({"topic": "t", "priority": 9}, "'priority' is not 1 to 5"),
        ({"topic": "t", "sequence": 1}, "unknown field"),
        ({"topic": "t", "actions": [VIEW] * 4}, "only 3 actions"),
        ({"topic": "t", "actions": [{"action": "view", "url": "https://a.example"}]}, "'label' is required"),
        ({"topic": "t", "actions": [{"action": "http", "label": "x"}]}, "'url' is required"),
        ({"topic": "t", "actions": [{"action": "jump", "label": "x"}]}, "cannot be 'jump'"),
        ({"topic": "t", "message": "é" * 2049}, "over 4,096 bytes"),
        (
            {
                "topic": "t",
                "actions": [{"action": "http", "label": "x", "url": "https://a", "method": "GET", "body": "b"}],
            },
            "'body' cannot be set",
        ),
        ([], "not a JSON object"),
    ],
)
def test_what_ntfy_refuses_is_refused(body: Any, problem: str) -> None:
    assert any(problem in found for found in problems_in(body))
