"""Debian packages that tests need (Dovecot, Chromium): installed with apt when missing and we are root.

Elsewhere the test skips naming the package, except under CI=true, where a missing package fails the run: CI must
never pass by skipping the tests that use real servers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def require_debian_package(package: str, *files: Path, why: str = "") -> None:
    """Make sure every path in `files` exists, installing `package` with apt-get if need be; else skip or fail."""
    if all(path.exists() for path in files):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", package]
        if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
            # A fresh machine's package lists may be empty or stale: refresh once, then try again.
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
            subprocess.run(install, env=env, capture_output=True, check=False)
        if all(path.exists() for path in files):
            return
    message = f"needs the Debian package {package} (apt-get install {package}; the tests install it when run as root)"
    if why:
        message += f": {why}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
