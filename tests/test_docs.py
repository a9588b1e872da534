"""The documentation a newcomer reads: README.md, the pages in docs/, and the site MkDocs builds from them.

Each check is a function that returns the problems it finds, so that a test can plant a fault and see it caught:
the site builds with `mkdocs build --strict` and no warning (a page left out of the nav, a link or an anchor that
goes nowhere); every relative link and image in README.md and docs/*.md points at a file (and heading) that exists,
since GitHub shows README.md without MkDocs; every backticked module (`bot.x.y`) or project path (`bot/x/y.py`) names
one that exists; README.md stays short and keeps the two commands it promises. No network: the site is built offline.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 150
README_COMMANDS = ("uv run handraise serve", "uv run pytest")

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
PROJECT_PATH = re.compile(r"(?:bot|core|tests|bench|docs|\.ci)/[\w./-]*")
DOTTED_NAME = re.compile(r"(?:bot|core)(?:\.\w+)+")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def without_code_blocks(text: str) -> str:
    """The text with fenced code blocks blanked: what they hold is an example, not a link or a name to check."""
    return FENCE.sub("", text)


def without_code(text: str) -> str:
    return INLINE_CODE.sub("", without_code_blocks(text))


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs (toc's default slugify) and GitHub both make it for plain headings."""
    text = INLINE_CODE.sub(r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    return {slug(heading) for heading in HEADING.findall(without_code_blocks(page.read_text()))}


def broken_links(files: Iterable[Path]) -> list[str]:
    """Relative links and images whose file, or whose `#anchor` in a Markdown file, does not exist."""
    problems: list[str] = []
    for page in files:
        for target in LINK.findall(without_code(page.read_text())):
            if EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            resolved = (page.parent / path_part).resolve() if path_part else page
            if not resolved.exists():
                problems.append(f"{page.name}: link to {target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{page.name}: link to {target}: no heading makes #{anchor}")
    return problems


def module_exists(dotted: str) -> bool:
    """Whether `bot.x.y` names a module of the project, or a name one of its modules has (imported to see)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:split])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            value: object = importlib.import_module(".".join(parts[:split]))
            for attribute in parts[split:]:
                if not hasattr(value, attribute):
                    return False
                value = getattr(value, attribute)
            return True
    return False


def missing_names(files: Iterable[Path]) -> list[str]:
    """Backticked project paths (`bot/x/y.py`) and modules or names (`bot.x.Y`) that do not exist."""
    problems: list[str] = []
    for page in files:
        for span in INLINE_CODE.findall(without_code_blocks(page.read_text())):
            if PROJECT_PATH.fullmatch(span) and not (ROOT / span).exists():
                problems.append(f"{page.name}: `{span}`: no such file or folder in the project")
            elif DOTTED_NAME.fullmatch(span) and not module_exists(span):
                problems.append(f"{page.name}: `{span}`: no such module or name in the project")
    return problems


def readme_problems(text: str) -> list[str]:
    problems: list[str] = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines >= README_MAX_LINES:
        problems.append(f"README.md has {lines} lines; keep it under {README_MAX_LINES} and move detail to docs/")
    for command in README_COMMANDS:
        # Exactly the command, on a line of its own (a comment may follow): what a newcomer copies.
        if not re.search(rf"^{re.escape(command)}[ \t]*(?:#.*)?$", text, re.MULTILINE):
            problems.append(f"README.md does not show the command `{command}` on a line of its own")
    return problems


def build_site(config: Path, site: Path) -> list[str]:
    """`mkdocs build --strict` of `config` into `site`; the warnings and errors it printed, or why it failed."""
    environ = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2.0, not our warning
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    output = result.stdout + result.stderr
    problems: list[str] = []
    told = False  # whether the lines now read continue a warning (MkDocs lists the pages it means below it)
    for line in output.splitlines():
        if re.match(r"(WARNING|ERROR)\b", line):
            problems.append(line)
            told = True
        elif told and line.startswith((" ", "\t")):
            problems[-1] += "\n" + line
        else:
            told = False
    if result.returncode != 0 and not problems:
        problems.append(f"mkdocs exited {result.returncode}: {output[-2000:]}")
    return problems


# --- the documentation as it is --------------------------------------------------------------------------------


def test_the_site_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    assert build_site(ROOT / "mkdocs.yml", tmp_path / "site") == []


def test_every_relative_link_and_image_points_at_something_that_exists() -> None:
    assert broken_links(markdown_files()) == []


def test_every_backticked_module_and_project_path_exists() -> None:
    assert missing_names(markdown_files()) == []


def test_the_readme_is_short_and_shows_both_commands() -> None:
    assert readme_problems(README.read_text()) == []


# --- each check catches what it is for ---------------------------------------------------------------------------


def test_a_broken_link_in_the_site_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the gone page](gone.md).\n")
    problems = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert any("gone.md" in problem for problem in problems), problems


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n\nIn no nav.\n")
    problems = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert any("orphan.md" in problem for problem in problems), problems


def test_a_link_to_a_missing_file_or_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading\n\n## `handraise ask` and more\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[fine](there.md#a-heading) [fine too](there.md#handraise-ask-and-more) [web](https://example.org/x)\n"
        "![gone](pictures/gone.png) [no such heading](there.md#nowhere)\n"
        "```\n[in a code block](not-checked.md)\n```\n"
    )
    assert broken_links([page]) == [
        "page.md: link to pictures/gone.png: no such file",
        "page.md: link to there.md#nowhere: no heading makes #nowhere",
    ]


def test_a_backticked_module_or_path_that_does_not_exist_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "`bot/questions/ledger.py` `bot.clients.agent.HandraiseClient` `core.UserQuestionError` exist;\n"
        "`bot/questions/gone.py`, `bot.gone.module` and `bot.clients.agent.NoSuchClient` do not.\n"
    )
    assert missing_names([page]) == [
        "page.md: `bot/questions/gone.py`: no such file or folder in the project",
        "page.md: `bot.gone.module`: no such module or name in the project",
        "page.md: `bot.clients.agent.NoSuchClient`: no such module or name in the project",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```sh\nuv run handraise serve\nuv run pytest   # tests\n```\n", []),
        ("```sh\nuv run pytest\n```\n", ["`uv run handraise serve`"]),
        (
            "```sh\nuv run handraise serve --config x.toml\n```\nrun `uv run pytest`\n",
            ["`uv run handraise serve`", "`uv run pytest`"],
        ),
        ("uv run handraise serve\nuv run pytest\n" + "more\n" * 148, ["150 lines"]),
    ],
)
def test_a_long_readme_or_one_without_its_commands_is_caught(text: str, expected: list[str]) -> None:
    problems = readme_problems(text)
    assert len(problems) == len(expected), problems
    for problem, words in zip(problems, expected, strict=True):
        assert words in problem
