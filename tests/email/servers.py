"""Real mail servers on loopback for the email tests: Dovecot (IMAP, and its LDA for delivery) and aiosmtpd.

Dovecot runs as root in the foreground and drops to uid 65534 for mail (uid 0 cannot own a mail session). Any user
logs in with the password `botpass`, so each test takes a mailbox of its own on one shared server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.bot.program_rig import free_port
from tests.system_packages import require_debian_package

PACKAGE = "dovecot-imapd"
PASSWORD = "botpass"
LDA = "/usr/lib/dovecot/dovecot-lda"
NOBODY = 65534
DOVECOT = Path("/usr/sbin/dovecot")


def need_dovecot() -> str:
    """The dovecot binary (installed with apt when missing and we are root); Dovecot must also run as root."""
    require_debian_package(PACKAGE, DOVECOT, Path(LDA), why="the email tests run a real Dovecot")
    if os.geteuid() != 0:
        message = "the email tests start Dovecot, which must run as root to drop to its mail user"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(DOVECOT)


class Dovecot:
    """One Dovecot instance in `root`; `stop()` and `start()` again keep its port and its mail."""

    def __init__(self, binary: str, root: Path) -> None:
        self.binary = binary
        self.root = root
        self.host = "127.0.0.1"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        for name in ("run", "state"):
            (root / name).mkdir(parents=True, exist_ok=True)
        # The mail user (nobody) must reach its mail; pytest's own temporary directories are private to root.
        self.mail = Path(tempfile.mkdtemp(prefix="handraise-mail-"))
        os.chmod(self.mail, 0o755)
        os.chown(self.mail, NOBODY, NOBODY)
        self.conf = root / "dovecot.conf"
        self.conf.write_text(
            f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:{self.mail}/%u/Maildir
passdb {{
  driver = static
  args = password={PASSWORD}
}}
userdb {{
  driver = static
  args = uid={NOBODY} gid={NOBODY} home={self.mail}/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
protocol lda {{
  postmaster_address = postmaster@example.org
}}
"""
        )

    def start(self) -> None:
        # Its own process group, so that stop() can end the imap processes too: a restart must drop the clients.
        self.process = subprocess.Popen(
            [self.binary, "-F", "-c", str(self.conf)], stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"dovecot did not start; see {self.root}/dovecot.log")

    def stop(self) -> None:
        """Stop Dovecot and every process it started, like a server restart: client connections are dropped.

        The master alone does not always take its imap processes down at once, and a lingering one keeps serving
        the old connection, which is not the restart the tests mean.
        """
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.mail, ignore_errors=True)

    def maildir(self, user: str) -> Path:
        return self.mail / user / "Maildir"

    def messages(self, user: str) -> list[bytes]:
        """Every message delivered to `user`, oldest first (read straight from the Maildir)."""
        paths = [p for sub in ("new", "cur") for p in (self.maildir(user) / sub).glob("*")]
        return [p.read_bytes() for p in sorted(paths, key=_delivery_order)]

    def seen(self, user: str) -> list[Path]:
        """The messages of `user` flagged \\Seen (Maildir keeps flags after ":2,")."""
        return [p for p in (self.maildir(user) / "cur").glob("*") if "S" in p.name.rpartition(":2,")[2]]

    def drop(self, raw: bytes, user: str) -> None:
        """Put a mail into `user`'s Maildir directly, as a mail server does; works while Dovecot is down."""
        now = time.time()
        new = self.maildir(user) / "new"
        path = new / f"{int(now)}.M{int(now * 1e6) % 1_000_000}P{os.getpid()}.handraise-test"
        path.write_bytes(raw)
        os.chown(path, NOBODY, NOBODY)

    def lda_command(self, user: str, *, recipient: str, sender: str) -> list[str]:
        return [LDA, "-c", str(self.conf), "-d", user, "-a", recipient, "-f", sender]

    def deliver(self, raw: bytes, user: str, *, recipient: str, sender: str) -> None:
        """Hand a mail to Dovecot's LDA, as a mail server does for local delivery."""
        command = self.lda_command(user, recipient=recipient, sender=sender)
        result = subprocess.run(command, input=raw, capture_output=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"dovecot-lda failed ({result.returncode}): {result.stderr.decode(errors='replace')}")


def _delivery_order(path: Path) -> tuple[int, int, str]:
    # Maildir names start "<seconds>.M<microseconds>P<pid>"; the microseconds are not zero-padded.
    seconds, _, rest = path.name.partition(".")
    micro = re.match(r"M(\d+)", rest)
    return int(seconds) if seconds.isdigit() else 0, int(micro[1]) if micro else 0, path.name


def mailbox_of(address: str) -> str:
    """The Dovecot user for an address: the plus part is dropped (bot+token@x is delivered to bot@x)."""
    local, _, domain = address.lower().rpartition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


class LdaHandler:
    """aiosmtpd handler that delivers every accepted mail into Dovecot through its LDA."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.dovecot = dovecot
        self.accepted = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content = envelope.original_content or envelope.content
        for recipient in envelope.rcpt_tos:
            sender = envelope.mail_from or ""
            command = self.dovecot.lda_command(mailbox_of(recipient), recipient=recipient, sender=sender)
            # Not subprocess.run: that would stall aiosmtpd's loop, and with it every other connection.
            lda = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            _, errors = await lda.communicate(content)
            if lda.returncode != 0:
                return f"451 4.3.0 dovecot-lda failed: {errors.decode(errors='replace')[:200]}"
        self.accepted += 1
        return "250 OK delivered"


class SmtpToDovecot:
    def __init__(self, dovecot: Dovecot) -> None:
        self.handler = LdaHandler(dovecot)
        self.port = free_port()
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
