"""The audit log as a hash chain: each row's `hash` covers the previous row's hash and its own stored content, so an
edited, inserted or deleted row breaks the chain at that row (`handraise history --verify`).

The canonical encoding (docs/operating.md, "Audit verification", says it for people who check without handraise):
the hash is the SHA-256, as 64 lowercase hex characters, of the concatenation of eight fields, each written as a
netstring (`<length in UTF-8 bytes>:<UTF-8 bytes>,`) or as `-,` when it is NULL: `prev`, `seq` (decimal), `at`
(UTC, `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`), `question_id`, `kind`, `channel`, `actor` and `detail_json` (the JSON text
exactly as stored). The first row's `prev` is 64 zeros. Rows written before a store kept a chain have neither, and
come only before the first chained row. Both stores compute the same hash: SQLite in `Store._append` (writes are
serialised by the file's write lock), PostgreSQL in one call per statement (`handraise_audit_chained`, schema 8),
made under the audit lock that already orders the log.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

GENESIS = "0" * 64
"""The `prev` of the first chained row."""


class ChainRow(NamedTuple):
    """An audit row as stored: what its hash covers, and the chain columns (None before the store kept a chain)."""

    seq: int
    at: str
    question_id: str | None
    kind: str
    channel: str | None
    actor: str | None
    detail_json: str
    prev: str | None
    hash: str | None


def chain_hash(
    prev: str,
    seq: int,
    at: str,
    question_id: str | None,
    kind: str,
    channel: str | None,
    actor: str | None,
    detail_json: str,
) -> str:
    """The hash of one row given the previous row's (the module's docstring says the encoding)."""
    number = str(seq)
    # One f-string rather than a join over the eight fields (two per question asked, one per answer): the fields
    # that may be None are the middle three.
    text = (
        f"{len(prev)}:{prev},{len(number)}:{number},{len(at)}:{at},{_counted(question_id)}{len(kind)}:{kind},"
        f"{_counted(channel)}{_counted(actor)}{len(detail_json)}:{detail_json},"
    )
    if not text.isascii():  # then a length in characters is not one in UTF-8 bytes: count the bytes
        fields = (prev, number, at, question_id, kind, channel, actor, detail_json)
        text = "".join(["-," if value is None else f"{len(_utf8(value))}:{value}," for value in fields])
    return hashlib.sha256(_utf8(text)).hexdigest()


def _counted(value: str | None) -> str:
    return "-," if value is None else f"{len(value)}:{value},"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def row_hash(row: ChainRow, prev: str) -> str:
    return chain_hash(prev, row.seq, row.at, row.question_id, row.kind, row.channel, row.actor, row.detail_json)


@dataclass(frozen=True)
class Verdict:
    """What walking the chain found: `broken` is the seq of the first row that does not hold (None: all hold)."""

    checked: int
    """Chained rows that hold."""
    unchained: int
    """Rows before the chain starts (written before the store kept one)."""
    first_chained: int | None
    broken: int | None

    def lines(self) -> list[str]:
        """What `--verify` prints: `seq N` alone when broken; else the rows checked, and where the chain starts."""
        if self.broken is not None:
            return [f"seq {self.broken}"]
        lines = [f"{self.checked} rows checked"]
        if self.unchained and self.first_chained is not None:
            lines.append(
                f"the chain starts at seq {self.first_chained}: the {self.unchained} rows before it were written "
                "before this store kept one, and are not covered"
            )
        elif self.unchained:
            lines.append(f"no row is chained yet: the {self.unchained} rows were written before this store kept one")
        return lines


class ChainCheck:
    """Walks the rows in seq order, a page at a time (`add` each row; `verdict()` at the end or once one breaks).

    A row breaks the chain when its `prev` is not the previous chained row's hash (64 zeros for the first), its
    `hash` is not that of its content, its seq does not grow, or it has no hash after the chain started. A deleted
    row breaks the next one (whose `prev` is the deleted row's hash).
    """

    def __init__(self) -> None:
        self._checked = self._unchained = 0
        self._first: int | None = None
        self._last_hash: str | None = None
        self._last_seq: int | None = None
        self._broken: int | None = None

    def add(self, row: ChainRow) -> bool:
        """Check one more row; False once the chain is broken (at this row or before)."""
        if self._broken is not None:
            return False
        if self._last_seq is not None and row.seq <= self._last_seq:
            self._broken = row.seq
            return False
        self._last_seq = row.seq
        if row.hash is None and row.prev is None and self._last_hash is None:
            self._unchained += 1
            return True
        expected = GENESIS if self._last_hash is None else self._last_hash
        if row.prev != expected or row.hash != row_hash(row, expected):
            self._broken = row.seq
            return False
        self._first = row.seq if self._first is None else self._first
        self._last_hash = row.hash
        self._checked += 1
        return True

    def verdict(self) -> Verdict:
        return Verdict(self._checked, self._unchained, self._first, self._broken)


def verify(rows: Iterable[ChainRow]) -> Verdict:
    """Walk every row (`ChainCheck`), stopping at the first that breaks the chain."""
    check = ChainCheck()
    for row in rows:
        if not check.add(row):
            break
    return check.verdict()


EXPORT_FIELDS = ChainRow._fields


def export_line(row: ChainRow) -> str:
    """One line of `handraise history --export`: the row as stored, so that the file verifies on its own."""
    return json.dumps(row._asdict(), ensure_ascii=False, separators=(",", ":"))


class ExportError(ValueError):
    """A line of an export file that is not an audit row; the message names the line."""


def read_export_line(text: str, number: int) -> ChainRow:
    """Parse one line of an export. Raises ExportError for anything but an object of the row's fields and types."""
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ExportError(f"line {number} is not JSON") from None
    if not isinstance(data, dict) or set(data) != set(EXPORT_FIELDS):  # pyright: ignore[reportUnknownArgumentType]
        raise ExportError(f"line {number} is not an audit row (its keys must be {', '.join(EXPORT_FIELDS)})")
    row: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    seq = row["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise ExportError(f"line {number}: seq is not a number")
    for name in ("at", "kind", "detail_json"):
        if not isinstance(row[name], str):
            raise ExportError(f"line {number}: {name} is not text")
    for name in ("question_id", "channel", "actor", "prev", "hash"):
        if row[name] is not None and not isinstance(row[name], str):
            raise ExportError(f"line {number}: {name} is neither text nor null")
    return ChainRow(**row)
