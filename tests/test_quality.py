"""The code standards, checked in CI: ruff clean, pyright clean (strict on `core`), on the files git tracks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tracked_python_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files are the project's")
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.split() if (ROOT / name).exists()]


def run_tool(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_reports_nothing() -> None:
    result = run_tool("ruff", "check", *tracked_python_files())
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    result = run_tool("ruff", "format", "--check", *tracked_python_files())
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyright_reports_nothing() -> None:
    result = run_tool("pyright", *tracked_python_files())
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
