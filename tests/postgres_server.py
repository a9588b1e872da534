"""A real PostgreSQL on loopback for the store tests: Debian's server, one per test session, a fresh database per test.

PostgreSQL refuses to run as root, so as root the cluster belongs to `nobody` (uid 65534) and its commands run as
that user; elsewhere they run as whoever runs the tests. The superuser connects over the Unix socket in the cluster's
own directory without a password (to create and drop databases); handraise connects over TCP as the role `handraise`
with a password full of URL-special characters, so the URLs the tests use exercise percent-encoding and real
password authentication. Durability is off (fsync): a test never survives a power loss, and it makes each database
cheap to create.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from itertools import count
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from tests.system_packages import require_debian_package

USER = "handraise"
PASSWORD = "p@ss:w/rd?#%"
NOBODY = 65534


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_binaries() -> Path:
    """The directory holding initdb and pg_ctl (installed with apt when missing and we are root)."""
    require_debian_package(
        "postgresql", Path("/usr/share/doc/postgresql/copyright"), why="the store tests run a real PostgreSQL"
    )
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda path: int(path.parts[-3]))
    if not found:
        raise RuntimeError("the postgresql package is installed but no /usr/lib/postgresql/*/bin/pg_ctl was found")
    return found[-1].parent


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; `stop()` and `start()` again keep its port and its data."""

    def __init__(self, binaries: Path, *, durable: bool = False) -> None:
        """`durable` keeps PostgreSQL's fsync on, for benchmarks; tests run without it."""
        self.binaries = binaries
        self.durable = durable
        self.host = "127.0.0.1"
        self.port = free_port()
        self._names = count(1)
        self.running = False
        # Not pytest's tmp_path: it is private to root, and the cluster's owner must reach its directory.
        self.root = Path(tempfile.mkdtemp(prefix="handraise-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        if os.geteuid() == 0:
            os.chown(self.root, NOBODY, NOBODY)
        os.chmod(self.root, 0o700)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--no-sync",
            "--no-instructions",
            "-E",
            "UTF8",
            "--locale=C",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        )

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.binaries / tool), *args]
        if os.geteuid() == 0:
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
        result = subprocess.run(command, cwd=self.root, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr.strip()}\n{log}")

    def start(self) -> None:
        options = [
            f"-p {self.port}",
            f"-k {self.root}",
            "-c listen_addresses=127.0.0.1",
            *([] if self.durable else ["-c fsync=off", "-c full_page_writes=off"]),
            "-c max_connections=200",
            "-c shared_buffers=16MB",
        ]
        self._run("pg_ctl", "start", "-w", "-s", "-D", str(self.data), "-l", str(self.log), "-o", " ".join(options))
        self.running = True

    def stop(self) -> None:
        """Stop the server at once, like an outage: every client connection is dropped."""
        self._run("pg_ctl", "stop", "-w", "-s", "-m", "fast", "-D", str(self.data))
        self.running = False

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def admin(self, database: str = "postgres") -> psycopg.Connection:
        """A superuser connection over the Unix socket, in autocommit (CREATE DATABASE refuses transactions)."""
        return psycopg.connect(host=str(self.root), port=self.port, user="postgres", dbname=database, autocommit=True)

    def set_up_role(self) -> None:
        with self.admin() as db:
            db.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD {}").format(sql.Identifier(USER), PASSWORD))

    def create_database(self) -> str:
        """A new empty database owned by the handraise role; returns its name."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        with self.admin() as db:
            db.execute(
                sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
                    sql.Identifier(name), sql.Identifier(USER)
                )
            )
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as db:
            db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def url(self, database: str, *, password: str = PASSWORD, port: int | None = None) -> str:
        """The `postgresql://` URL handraise is given: user and password percent-encoded, as an operator writes it."""
        credentials = f"{quote(USER, safe='')}:{quote(password, safe='')}"
        return f"postgresql://{credentials}@{self.host}:{port or self.port}/{database}"
