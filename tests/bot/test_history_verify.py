"""`handraise history --json`, `--verify`, `--export` and `--verify --from` on what a real `serve` wrote, on SQLite and
PostgreSQL: a store as serve left it holds, an edited one and a cut one are named at their first broken row, and an
export verifies alone."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import cast

import aiohttp
import anyio
import pytest

from bot.cli import main
from tests.postgres_server import PostgresServer

from .serve_process import serve

pytestmark = pytest.mark.anyio

URL_ENV = "HANDRAISE_DATABASE_URL"
ASK = {"questions": [{"id": "q1", "question": "Deploy v2?", "options": [{"label": "Yes"}]}]}
Tamper = Callable[[str], None]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Tamper]:
    """The config `serve` and `history` read, and a way to run SQL on its store behind handraise's back."""
    config = tmp_path / "config.toml"
    store = f'[store]\npath = "{tmp_path / "handraise.db"}"\n'
    if request.param == "sqlite":

        def tamper(statement: str) -> None:
            with sqlite3.connect(tmp_path / "handraise.db") as db:
                db.execute("DROP TRIGGER IF EXISTS audit_no_update")
                db.execute("DROP TRIGGER IF EXISTS audit_no_delete")
                db.execute(statement)
            db.close()

    else:
        url = cast(str, request.getfixturevalue("postgres_url"))
        server = cast(PostgresServer, request.getfixturevalue("postgres_server"))
        monkeypatch.setenv(URL_ENV, url)
        store += f'url_env = "{URL_ENV}"\n'

        def tamper(statement: str) -> None:
            with server.admin(url.rsplit("/", 1)[1]) as db:
                db.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
                db.execute(statement.encode())

    config.write_text(f'[server]\nlisten = "127.0.0.1:0"\n{store}')
    return config, tamper


async def history(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    capsys.readouterr()
    code = await anyio.to_thread.run_sync(main, ["history", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


async def questions_through_serve(config: Path, log: Path, count: int) -> None:
    async with serve(config, log) as (_, base), aiohttp.ClientSession() as session:
        for _ in range(count):
            async with session.post(f"{base}/v1/questions", json=ASK) as reply:
                question_id = (await reply.json())["id"]
            async with session.delete(f"{base}/v1/questions/{question_id}") as reply:
                assert reply.status == 200


async def test_what_serve_wrote_verifies_edited_and_cut_stores_are_named(
    backend: tuple[Path, Tamper], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, tamper = backend
    await questions_through_serve(config, tmp_path / "serve.log", 3)
    await questions_through_serve(config, tmp_path / "serve.log", 1)  # the chain goes on after a restart
    code, rows, _ = await history(capsys, "--config", str(config), "--json")
    assert code == 0
    shown = [json.loads(row) for row in rows]
    assert [row["seq"] for row in shown] == list(range(1, len(shown) + 1)) and len(shown) >= 8
    assert shown[0]["prev"] == "0" * 64
    assert all(after["prev"] == before["hash"] for before, after in itertools.pairwise(shown))
    assert await history(capsys, "--config", str(config), "--verify") == (0, [f"{len(shown)} rows checked"], "")

    export = tmp_path / "audit.jsonl"
    code, out, _ = await history(capsys, "--config", str(config), "--export", str(export))
    assert (code, out) == (0, [f"{len(shown)} rows exported to {export}"])
    assert await history(capsys, "--verify", "--from", str(export)) == (0, [f"{len(shown)} rows checked"], "")

    tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 3")
    assert await history(capsys, "--config", str(config), "--verify") == (1, ["seq 3"], "")
    tamper("DELETE FROM audit WHERE seq = 3")
    assert await history(capsys, "--config", str(config), "--verify") == (1, ["seq 4"], "")
    # the export made before still verifies on its own: it is the record to compare the store with
    assert (await history(capsys, "--verify", "--from", str(export)))[0] == 0


async def test_an_edited_or_cut_export_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{tmp_path / "h.db"}"\n')
    await questions_through_serve(config, tmp_path / "serve.log", 2)
    export = tmp_path / "audit.jsonl"
    assert (await history(capsys, "--config", str(config), "--export", str(export)))[0] == 0
    lines = export.read_text().splitlines()
    edited = [json.loads(line) for line in lines]
    edited[2]["detail_json"] = edited[2]["detail_json"].replace("}", ', "x": 1}')
    export.write_text("".join(json.dumps(row) + "\n" for row in edited))
    assert await history(capsys, "--verify", "--from", str(export)) == (1, ["seq 3"], "")
    export.write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    assert await history(capsys, "--verify", "--from", str(export)) == (1, ["seq 3"], "")


@pytest.mark.parametrize("content", [b"garbage\n", b"\xff\xfe\n", b'{"seq": 1}\n', b"[" * 50_000 + b"\n"])
async def test_an_export_that_is_not_one_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    export = tmp_path / "audit.jsonl"
    export.write_bytes(content)
    code, out, err = await history(capsys, "--verify", "--from", str(export))
    assert (code, out) == (2, []) and err.count("\n") == 1 and str(export) in err


async def test_flags_that_do_not_go_together_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[store]\npath = "{tmp_path / "h.db"}"\n')
    assert (await history(capsys, "--config", str(config), "--verify", "--question", "q_1"))[0] == 2
    assert (await history(capsys, "--from", str(config)))[0] == 2
    assert await history(capsys, "--config", str(config), "--verify") == (0, ["0 rows checked"], "")
