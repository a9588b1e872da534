"""The public face of `core` and its import boundary."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import core

CORE = Path(core.__file__).parent
ALLOWED_THIRD_PARTY = {"pydantic", "anyio"}


def test_all_names_the_public_api_exactly() -> None:
    assert set(core.__all__) == {
        "REQUEST_EVENT",
        "AbortController",
        "AbortSignal",
        "Agent",
        "AgentRegistry",
        "AskUserQuestionAnswer",
        "AskUserQuestionAnswerItem",
        "AskUserQuestionIntent",
        "AskUserQuestionItem",
        "AskUserQuestionOption",
        "AskUserQuestionRequest",
        "AskUserQuestionTool",
        "Context",
        "Dispose",
        "ErrorCode",
        "Listener",
        "Next",
        "PluginHandle",
        "UserQuestionError",
        "UserQuestionService",
        "format_answer",
        "no_provider",
        "parse_questions",
    }
    assert len(core.__all__) == len(set(core.__all__))
    for name in core.__all__:
        assert getattr(core, name) is not None


def imported_top_level_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_core_imports_only_the_standard_library_pydantic_and_anyio() -> None:
    for path in CORE.glob("*.py"):
        outside = imported_top_level_modules(path) - sys.stdlib_module_names - ALLOWED_THIRD_PARTY - {"core"}
        assert outside == set(), f"{path.name} imports {outside}"
