"""docs/teams-preview-*.json are the cards the channel sends today (docs/tools/teams_preview.py writes them)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("teams_preview", ROOT / "docs" / "tools" / "teams_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


preview = load_preview()


@pytest.mark.parametrize("name", sorted(preview.cards()))
def test_the_committed_cards_are_what_the_channel_sends_today(name: str) -> None:
    committed = json.loads((ROOT / "docs" / name).read_text(encoding="utf-8"))
    assert committed == preview.cards()[name], "run: uv run python docs/tools/teams_preview.py"


def test_the_multi_select_preview_is_a_choice_set_with_submit() -> None:
    card = preview.cards()["teams-preview-multi-select.json"]
    (field,) = [item for item in card["body"] if item["type"] == "Input.ChoiceSet"]
    assert field["isMultiSelect"] is True and [a["title"] for a in card["actions"]] == ["Submit", "Other…"]
