"""A missing system package skips a test on a developer's machine but fails it under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.system_packages import require_debian_package


def test_present_files_need_nothing(tmp_path: Path) -> None:
    require_debian_package("no-such-package", tmp_path)


def test_missing_without_root_skips_naming_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Debian package dovecot-imapd"):
        require_debian_package("dovecot-imapd", tmp_path / "missing")


def test_missing_under_ci_fails_instead_of_skipping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Debian package chromium"):
        require_debian_package("chromium", tmp_path / "missing")
