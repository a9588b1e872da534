"""A checker for Block Kit's limits (the table in the testing notes), stricter than slack-sdk's own models."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from slack_sdk.models.blocks import Block as SdkBlock
from slack_sdk.models.views import View as SdkView

from bot.slack.blocks import units

OUR_TOKENS = re.compile(r"<(@[UW][A-Z0-9]+|!subteam\^S[A-Z0-9]+|!date\^[0-9]+\^[^|<>]*\|[^<>]*)>")
"""The only `<…>` tokens handraise itself writes into mrkdwn; anything else would be injected agent text."""


def check_text(obj: Any, limit: int, *, kind: str | None = None) -> None:
    assert isinstance(obj, dict), obj
    if kind is not None:
        assert obj["type"] == kind, obj
    assert obj["type"] in ("plain_text", "mrkdwn"), obj
    text = obj["text"]
    assert isinstance(text, str) and text.strip(), f"empty text object {obj}"
    assert units(text) <= limit, f"{units(text)} > {limit}: {text[:80]}…"
    if obj["type"] == "mrkdwn":
        assert "<" not in OUR_TOKENS.sub("", text) and ">" not in OUR_TOKENS.sub("", text), text


def check_option(option: Any) -> None:
    check_text(option["text"], 75, kind="plain_text")
    assert 0 < len(option["value"]) <= 150
    if "description" in option:
        check_text(option["description"], 75, kind="plain_text")


def check_element(element: dict[str, Any], action_ids: set[str]) -> None:
    kind = element["type"]
    action_id = element["action_id"]
    assert 0 < len(action_id) <= 255
    assert action_id not in action_ids, f"duplicate action_id {action_id}"
    action_ids.add(action_id)
    if kind == "button":
        check_text(element["text"], 75, kind="plain_text")
        assert 0 < len(element["value"]) <= 2000
        assert element.get("style") in (None, "primary", "danger")
    elif kind in ("radio_buttons", "checkboxes", "static_select", "multi_static_select"):
        options = element["options"]
        limit = 10 if kind in ("radio_buttons", "checkboxes") else 100
        assert 0 < len(options) <= limit, f"{kind} with {len(options)} options"
        for option in options:
            check_option(option)
        values = [option["value"] for option in options]
        assert len(set(values)) == len(values)
        for initial in element.get("initial_options", []) + [element.get("initial_option")] * (
            "initial_option" in element
        ):
            assert initial in options, "an initial option must be one of the options"
        if "placeholder" in element:
            check_text(element["placeholder"], 150, kind="plain_text")
    elif kind == "plain_text_input":
        assert element.get("max_length", 3000) <= 3000
        if "placeholder" in element:
            check_text(element["placeholder"], 150, kind="plain_text")
    else:
        raise AssertionError(f"unexpected element {kind}")


def check_blocks(blocks: list[dict[str, Any]], *, surface: str = "message") -> None:
    """Assert that `blocks` respects every limit handraise relies on, and that slack-sdk reads it back unchanged."""
    assert 0 < len(blocks) <= (50 if surface == "message" else 100), f"{len(blocks)} blocks"
    block_ids: set[str] = set()
    action_ids: set[str] = set()
    for block in blocks:
        assert SdkBlock.parse(block).to_dict() == block, block  # pyright: ignore[reportOptionalMemberAccess]
        if "block_id" in block:
            assert 0 < len(block["block_id"]) <= 255 and block["block_id"] not in block_ids
            block_ids.add(block["block_id"])
        kind = block["type"]
        if kind == "section":
            check_text(block["text"], 3000)
        elif kind == "header":
            check_text(block["text"], 150, kind="plain_text")
        elif kind == "context":
            assert 0 < len(block["elements"]) <= 10
            for element in block["elements"]:
                check_text(element, 3000)
        elif kind == "actions":
            assert 0 < len(block["elements"]) <= 25
            for element in block["elements"]:
                check_element(element, action_ids)
        elif kind == "input":
            assert surface == "modal", "input blocks in messages need dispatch_action"
            check_text(block["label"], 2000, kind="plain_text")
            check_element(block["element"], set())
        else:
            raise AssertionError(f"unexpected block {kind}")


def check_view(view: dict[str, Any]) -> None:
    assert SdkView(**view).to_dict() == view
    check_text(view["title"], 24, kind="plain_text")
    for key in ("submit", "close"):
        if key in view:
            check_text(view[key], 24, kind="plain_text")
    assert len(view.get("private_metadata", "")) <= 3000
    check_blocks(view["blocks"], surface="modal")


def mrkdwn_texts(blocks: list[dict[str, Any]]) -> Iterator[str]:
    for block in blocks:
        if block["type"] == "section":
            yield block["text"]["text"]
        elif block["type"] == "context":
            yield from (element["text"] for element in block["elements"])


def elements(blocks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for block in blocks:
        if block["type"] == "actions":
            yield from block["elements"]
        elif block["type"] == "input":
            yield block["element"]
