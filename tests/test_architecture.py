"""The house, checked from the source: `core` knows nothing of `bot`, `bot` uses only `core`'s public face, channels
never import each other, the shared base names no channel (only `bot/kinds.py` lists them), no import circle
anywhere, every folder's rooms import each other one way only, and `bot/` keeps a small front door.

Every import statement counts, wherever it stands: at the top, inside a function, under `TYPE_CHECKING`. An import
moved into a function to dodge a circle is still the circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

import core

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "bot"
REGISTRY = BOT / "kinds.py"
CHANNEL_PACKAGES = sorted(
    node.module.split(".")[1]
    for node in ast.walk(ast.parse(REGISTRY.read_text()))
    if isinstance(node, ast.ImportFrom)
    and node.module
    and node.module.startswith("bot.")
    and node.module.endswith(".kind")
    and node.module != "bot.channels.kind"
)
"""The channel packages: those whose kind the registry imports (bot/claude and bot/mcp_server are clients,
bot/channels is the kit they are built on)."""
FRONT_DOOR_LIMIT = 14
"""At most this many modules stand at the top of `bot/`; the rest lives in packages named for what they are."""


def module_name(path: Path) -> str:
    """`bot/store/open.py` -> `bot.store.open`; a package's `__init__.py` is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


MODULES: Mapping[str, Path] = {module_name(path): path for path in modules(BOT) + modules(ROOT / "core")}


def imports(path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every import in `path`, at any depth, relative ones made absolute: (module, names taken from it; empty for
    `import module`)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module, tuple(alias.name for alias in node.names)


@cache
def targets(path: Path) -> frozenset[str]:
    """The project's modules `path` imports: `from package import module` names that module, not the package."""
    found: set[str] = set()
    for module, names in imports(path):
        submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in MODULES]
        found.update(submodules)
        if module in MODULES and (not names or len(submodules) < len(names)):
            found.add(module)
    return frozenset(found - {module_name(path)})


def graph() -> dict[str, frozenset[str]]:
    return {name: targets(path) for name, path in MODULES.items()}


def circles(edges: Mapping[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def ties(edges: Mapping[str, frozenset[str]], part: list[str]) -> list[str]:
    """The imports that hold a circle together, for the failure message."""
    members = set(part)
    return [f"{a} -> {b}" for a in part for b in sorted(edges[a]) if b in members]


FOLDERS = [BOT, *sorted(path for path in BOT.rglob("*") if path.is_dir() and (path / "__init__.py").exists())]


def room_of(module: str, folder: Path) -> str | None:
    """The room of `folder` that `module` is in: a module file of the folder, or a sub-package taken whole; None
    when `module` lies outside the folder."""
    path = MODULES[module]
    if folder not in path.parents:
        return None
    first, *rest = path.relative_to(folder).parts
    return first if rest else first.removesuffix(".py")


def floor_edges(folder: Path) -> dict[str, frozenset[str]]:
    """Which room of `folder` imports which."""
    edges: dict[str, set[str]] = {}
    for module, imported in graph().items():
        room = room_of(module, folder)
        if room is None:
            continue
        edges.setdefault(room, set())
        for other in imported:
            other_room = room_of(other, folder)
            if other_room is not None and other_room != room:
                edges[room].add(other_room)
    return {room: frozenset(to) for room, to in edges.items()}


# -- circles and floors ----------------------------------------------------------------------------------------------


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    # bot.replicas.for_store imports the PostgreSQL replica inside a function, and bot.channels.kind names the
    # ledger under TYPE_CHECKING: both are edges, or the checks below would miss circles hidden that way.
    assert "bot.replicas.postgres" in targets(MODULES["bot.replicas.for_store"])
    assert "bot.questions.ledger" in targets(MODULES["bot.channels.kind"])


def test_the_cycle_finder_finds_a_planted_circle() -> None:
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_no_module_imports_itself_back_round_a_circle() -> None:
    edges = graph()
    found = [ties(edges, part) for part in circles(edges) if part[0].startswith("bot")]
    assert not found, f"import circles: {found}"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: str(folder.relative_to(ROOT)))
def test_the_rooms_of_every_folder_import_each_other_one_way(folder: Path) -> None:
    edges = floor_edges(folder)
    found = [ties(edges, part) for part in circles(edges)]
    assert not found, f"rooms of {folder.relative_to(ROOT)}/ import each other both ways: {found}"


def test_the_front_door_stays_small() -> None:
    top = sorted(path.name for path in BOT.glob("*.py"))
    assert len(top) <= FRONT_DOOR_LIMIT, f"bot/ has {len(top)} top-level modules: {top}; move some into a package"


# -- layers ----------------------------------------------------------------------------------------------------------


def package_of(module: str) -> str | None:
    """The channel package a `bot.x.y` module belongs to, if any."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "bot" and parts[1] in CHANNEL_PACKAGES else None


def test_there_are_channel_packages_to_check() -> None:
    assert {"slack", "email", "web", "telegram"} <= set(CHANNEL_PACKAGES)


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


BASE = [path for path in modules(BOT) if path != REGISTRY and package_of(module_name(path)) is None]
"""Everything but the channels and their registry: the kit, the store, the program, the clients."""


@pytest.mark.parametrize("path", BASE, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_shared_base_imports_no_channel(path: Path) -> None:
    named = {found for m, _ in imports(path) if (found := package_of(m)) is not None}
    assert not named, f"{path.relative_to(ROOT)} imports the {named} channel; only bot/kinds.py lists the channels"


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
    assert not named, f"{path.relative_to(ROOT)} names the {named} channel; loop over bot.kinds.KINDS instead"
