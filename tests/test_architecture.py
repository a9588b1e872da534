"""The layers, checked from the source: `core` knows nothing of `bot`, `bot` uses only `core`'s public face, channels
never import each other, and the shared base names no channel (only `bot/kinds.py` lists them)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import core

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "bot"
CHANNEL_PACKAGES = sorted(path.name for path in BOT.iterdir() if (path / "kind.py").exists())
"""The channel packages: those that describe themselves as a kind (bot/claude and bot/mcp_server are clients)."""
REGISTRY = BOT / "kinds.py"


def imports(path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every absolute import in `path`: (module, names imported from it; empty for `import module`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, tuple(alias.name for alias in node.names)


def modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def package_of(module: str) -> str | None:
    """The channel package a `bot.x.y` module belongs to, if any."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "bot" and parts[1] in CHANNEL_PACKAGES else None


def test_there_are_channel_packages_to_check() -> None:
    assert {"slack", "email", "web"} <= set(CHANNEL_PACKAGES)


def test_core_imports_nothing_from_bot() -> None:
    for path in modules(ROOT / "core"):
        assert not [m for m, _ in imports(path) if m.split(".")[0] == "bot"], path


@pytest.mark.parametrize("path", modules(BOT), ids=lambda path: str(path.relative_to(ROOT)))
def test_bot_uses_only_the_public_names_of_core(path: Path) -> None:
    for module, names in imports(path):
        if module.split(".")[0] != "core":
            continue
        assert module == "core", f"{path.name} reaches into {module}; import from `core` instead"
        assert set(names) <= set(core.__all__), f"{path.name} imports {set(names) - set(core.__all__)} from core"


@pytest.mark.parametrize("package", CHANNEL_PACKAGES)
def test_a_channel_never_imports_another_channel(package: str) -> None:
    for path in modules(BOT / package):
        others = {found for m, _ in imports(path) if (found := package_of(m)) not in (None, package)}
        assert not others, f"{path.relative_to(ROOT)} imports the {others} channel"


BASE = [p for p in sorted(BOT.glob("*.py")) if p != REGISTRY]


@pytest.mark.parametrize("path", BASE, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_shared_base_imports_no_channel(path: Path) -> None:
    named = {found for m, _ in imports(path) if (found := package_of(m)) is not None}
    assert not named, f"{path.name} imports the {named} channel; only bot/kinds.py lists the channels"


def string_constants(path: Path) -> set[str]:
    """The string literals in `path`'s code, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


@pytest.mark.parametrize("path", BASE, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_shared_base_names_no_channel_in_its_code(path: Path) -> None:
    named = string_constants(path) & set(CHANNEL_PACKAGES)
    assert not named, f"{path.name} names the {named} channel; loop over bot.kinds.KINDS instead"
