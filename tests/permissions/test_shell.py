"""A shell command split into the simple commands it runs: each one a rule must allow, none hidden in another."""

from __future__ import annotations

import time

import pytest

from bot.permissions.shell import MAX_NESTING, command_parts, without_reserved_words


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("git status", ["git status"]),
        ("  git status  ", ["git status"]),
        ("git status && rm -rf build", ["git status", "rm -rf build"]),
        ("make || echo failed", ["make", "echo failed"]),
        ("cd src; ls", ["cd src", "ls"]),
        ("ls\nrm -rf /", ["ls", "rm -rf /"]),
        ("ls | grep x | wc -l", ["ls", "grep x", "wc -l"]),
        ("make |& tee log", ["make", "tee log"]),
        ("sleep 10 & rm -rf x", ["sleep 10", "rm -rf x"]),
        ("ls 2>&1 | grep x", ["ls 2>&1", "grep x"]),
        ("ls &> out", ["ls &> out"]),
        ("ls >| out", ["ls >| out"]),
        ("ls <&3", ["ls <&3"]),
    ],
)
def test_lists_and_pipelines_split_at_every_operator(command: str, parts: list[str]) -> None:
    assert command_parts(command) == tuple(parts)


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("echo $(rm -rf /)", ["echo $(rm -rf /)", "rm -rf /"]),
        ("echo `rm -rf /`", ["echo `rm -rf /`", "rm -rf /"]),
        ('echo "$(rm -rf /)"', ['echo "$(rm -rf /)"', "rm -rf /"]),
        ('echo "`id`"', ['echo "`id`"', "id"]),
        ("echo ${x:-$(id)}", ["echo ${x:-$(id)}", "id"]),
        ("diff <(ls a) >(tee b)", ["diff <(ls a) >(tee b)", "ls a", "tee b"]),
        ("echo $(a $(b && c))", ["echo $(a $(b && c))", "a $(b && c)", "b", "c"]),
        ("echo `a \\`b\\``", ["echo `a \\`b\\``", "a `b`", "b"]),
        ("( cd x && make )", ["cd x", "make"]),
        ("(rm x) > log", ["(rm x) > log", "rm x"]),
        ("echo $((1 + 2))", ["echo $((1 + 2))", "1 + 2"]),
    ],
)
def test_what_runs_inside_substitutions_and_subshells_is_a_part_too(command: str, parts: list[str]) -> None:
    assert command_parts(command) == tuple(parts)


@pytest.mark.parametrize(
    "command",
    [
        'echo "a && b"',
        "echo 'a; rm -rf /'",
        "echo a\\;rm",
        "echo a \\&\\& rm",
        "echo $'it\\'s; rm -rf /'",
        'echo "it\'s | fine"',
        "echo 'no $(substitution) here'",
        "echo '`nor here`'",
        "ls \\\n  -la",
    ],
)
def test_quoted_and_escaped_operators_stay_in_one_part(command: str) -> None:
    assert command_parts(command) == (command.strip(),)


@pytest.mark.parametrize(
    "command",
    [
        'echo "unterminated',
        "echo 'unterminated",
        "echo $'unterminated",
        "echo $(unterminated",
        "echo `unterminated",
        "echo ${unterminated",
        "echo )",
        "( a",
        "echo trailing\\",
        "cat <<EOF\nrm -rf /\nEOF",
        "case x in a) rm -rf / ;; esac",
    ],
)
def test_what_cannot_be_read_for_sure_gives_none(command: str) -> None:
    assert command_parts(command) is None


def test_a_here_string_is_read() -> None:
    assert command_parts("cat <<< 'a; b'") == ("cat <<< 'a; b'",)


def test_deep_nesting_is_refused_not_a_crash() -> None:
    assert command_parts("$(" * (MAX_NESTING + 5) + "x" + ")" * (MAX_NESTING + 5)) is None
    assert command_parts("`" * 10_001) is None  # five thousand empty substitutions and one left open
    assert command_parts("(" * 100_000) is None
    assert command_parts("${" * 100_000) is None
    shallow = "$(" * 10 + "x" + ")" * 10
    parts = command_parts(shallow)
    assert parts is not None and "x" in parts


def test_a_huge_command_is_split_quickly() -> None:
    command = " && ".join(f"echo {'a' * 50} {index}" for index in range(15_000))  # about a megabyte
    began = time.perf_counter()
    parts = command_parts(command)
    assert parts is not None and len(parts) == 15_000
    assert time.perf_counter() - began < 5


@pytest.mark.parametrize("command", ["", "   ", ";;", "\n\n", "&&", "\x00", "\ud800", "'\x00'"])
def test_garbage_never_raises(command: str) -> None:
    parts = command_parts(command)
    assert parts is None or all(isinstance(part, str) and part for part in parts)


def test_reserved_words_before_a_command_are_looked_past() -> None:
    assert without_reserved_words("then rm -rf x") == "rm -rf x"
    assert without_reserved_words("! { time rm -rf x") == "rm -rf x"
    assert without_reserved_words("rm -rf x") == "rm -rf x"
    assert without_reserved_words("fi") == ""
