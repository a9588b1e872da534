"""`handraise teams conversations`: the conversations serve has seen, printed as subscriptions to paste."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import BUILT_IN, build_parser, main
from bot.teams.conversations import Conversation, ConversationBook, seen_in

SEEN = Conversation(
    conversation="19:deploys@thread.tacv2",
    service_url="https://smba.trafficmanager.net/emea/",
    kind="channel",
    team="Platform",
    channel="deploys",
)


def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    book = tmp_path / "seen.json"
    path.write_text(f'[teams]\ntenant_id = "contoso.example"\nconversations_file = "{book}"\n')
    return path


def test_the_seen_conversations_print_as_subscriptions_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path)
    ConversationBook(tmp_path / "seen.json").note(SEEN)
    assert main(["teams", "conversations", "--config", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "# Platform / deploys\n[[teams.subscriptions]]" in printed
    assert 'conversation = "19:deploys@thread.tacv2"' in printed
    assert 'service_url = "https://smba.trafficmanager.net/emea/"' in printed


def test_none_seen_says_how_to_get_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["teams", "conversations", "--config", str(config(tmp_path))]) == 0
    assert "No Teams conversation seen yet" in capsys.readouterr().out


def test_a_config_without_a_teams_table_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[web]\n")
    assert main(["teams", "conversations", "--config", str(path)]) == 2
    assert "no [teams] table" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["teams"], ["teams", "nonsense"], ["fax", "send"]])
def test_an_unknown_channel_command_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err


def test_a_damaged_or_hostile_file_lists_only_what_reads(tmp_path: Path) -> None:
    book = tmp_path / "seen.json"
    book.write_text(json.dumps([{"conversation": 5}, "x", {"conversation": "19:a", "service_url": "https://s/"}]))
    assert [c.conversation for c in ConversationBook(book).all()] == ["19:a"]
    book.write_text("not json")
    assert ConversationBook(book).all() == []


def test_an_activity_in_a_thread_names_the_channel_not_the_thread() -> None:
    seen = seen_in({"serviceUrl": "https://s/", "conversation": {"id": "19:a@thread.tacv2;messageid=17"}})
    assert seen is not None and seen.conversation == "19:a@thread.tacv2"
    assert seen_in({"serviceUrl": "https://s/", "conversation": {"id": "x" * 500}}) is None
    assert seen_in({"conversation": "19:a"}) is None


def test_the_built_in_commands_are_the_parsers() -> None:
    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    assert set(BUILT_IN) == set(commands.choices or ())
