"""An agent's JSON settings file, read and written back the way its owner keeps it.

Installing and uninstalling handraise must leave the person's file as they had it: the same indentation, key order,
line endings, byte-order mark and file mode, the real file behind a symlink (dotfile managers link these files), and
never half a file (written beside it, then renamed over it). A file that is not a JSON object, or that is read-only,
is refused with a message, untouched.

Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.clients.ask import BadInput

BOM = "\ufeff"
MAX_BYTES = 8 * 1024 * 1024
"""A settings file larger than this is not one a person keeps; refuse it rather than read it."""


@dataclass(frozen=True)
class Layout:
    """How a JSON file is laid out, so that writing it back changes only what changed."""

    indent: int | str | None = 2
    compact: bool = False
    """Without spaces after `,` and `:` (only for a file on one line)."""
    ensure_ascii: bool = False
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False

    def dump(self, data: object) -> str:
        separators = (",", ":") if self.compact else None
        text = json.dumps(data, indent=self.indent, separators=separators, ensure_ascii=self.ensure_ascii)
        if self.final_newline:
            text += "\n"
        return (BOM if self.bom else "") + text.replace("\n", self.newline)


CANDIDATE_INDENTS: tuple[int | str | None, ...] = (2, 4, "\t", 1, 3, 8, None)


def layout_of(text: str, data: object) -> Layout:
    """The layout that writes `data` back as exactly `text`; failing that (a hand-formatted file), its indentation."""
    bom = text.startswith(BOM)
    body = text.removeprefix(BOM)
    newline = "\r\n" if "\r\n" in body else "\n"
    final = body.endswith(newline)
    for indent in CANDIDATE_INDENTS:
        for compact in (False, True) if indent is None else (False,):
            for ensure_ascii in (False, True):
                layout = Layout(indent, compact, ensure_ascii, newline, final, bom)
                if layout.dump(data) == text:
                    return layout
    return Layout(_indent_of(body), False, False, newline, final, bom)


def _indent_of(body: str) -> int | str:
    for line in body.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


@dataclass
class SettingsFile:
    """One agent settings file: where it is, what it holds, and how to write it back."""

    path: Path
    """The real file (a symlink followed), which is what gets rewritten."""
    shown: str
    """The path as the person wrote it or would: `~/...` under the home folder."""
    data: dict[str, Any]
    layout: Layout
    existed: bool
    mode: int | None
    """The file's permission bits; None for a file not yet written."""

    def save(self) -> None:
        """Write `data` whole, atomically, with the file's mode. Raises BadInput for a file it may not write."""
        self._refuse_read_only()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                    out.write(self.layout.dump(self.data))
                os.chmod(temporary, self.mode if self.mode is not None else _new_file_mode())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as error:
            raise BadInput(f"{self.shown}: cannot write it ({error.strerror or error}); nothing was changed") from None
        self.existed = True

    def delete(self) -> None:
        """Remove the file, and its folder when that is left empty (install made both)."""
        self._refuse_read_only()
        try:
            self.path.unlink()
        except OSError as error:
            raise BadInput(f"{self.shown}: cannot delete it ({error.strerror or error})") from None
        with contextlib.suppress(OSError):  # the folder holds other files, as it usually does
            self.path.parent.rmdir()

    def _refuse_read_only(self) -> None:
        # Renaming over a file needs no write permission on it, so a read-only file is refused here, on purpose:
        # whoever made it read-only wants it left alone.
        if self.mode is not None and not self.mode & stat.S_IWUSR:
            raise BadInput(f"{self.shown} is read-only (mode {self.mode:o}); nothing was changed")


def read_settings(path: Path) -> SettingsFile:
    """The file at `path` ({} when there is none). Raises BadInput for one that is not a JSON object."""
    shown = display(path)
    real = path.resolve() if path.is_symlink() else path
    try:
        status = real.stat()
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(status.st_mode):
            raise BadInput(f"{shown} is not a regular file; nothing was changed")
        if status.st_size > MAX_BYTES:
            raise BadInput(f"{shown} is over {MAX_BYTES // (1024 * 1024)} MB, too large for a settings file")
        raw = real.read_bytes()
        mode = stat.S_IMODE(status.st_mode)
    except FileNotFoundError:
        return SettingsFile(real, shown, {}, Layout(), existed=False, mode=None)
    except IsADirectoryError:
        raise BadInput(f"{shown} is a folder, not a settings file") from None
    except OSError as error:
        raise BadInput(f"{shown}: cannot read it ({error.strerror or error})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{shown} is not UTF-8 text; nothing was changed") from None
    if not text.strip(BOM + " \t\r\n"):
        return SettingsFile(real, shown, {}, Layout(), existed=True, mode=mode)
    try:
        data = json.loads(text.removeprefix(BOM))
    except (json.JSONDecodeError, RecursionError) as error:
        raise BadInput(
            f"{shown} is not valid JSON ({error}); nothing was changed. Fix it (or add the entry by hand)"
        ) from None
    if not isinstance(data, dict):
        raise BadInput(f"{shown} holds JSON that is not an object; nothing was changed")
    return SettingsFile(real, shown, data, layout_of(text, data), existed=True, mode=mode)


def display(path: Path) -> str:
    """`path` with the home folder written `~`, as the agents' own documentation names these files."""
    absolute = Path(os.path.abspath(path))
    try:
        return "~/" + absolute.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(absolute)


def _new_file_mode() -> int:
    # What open() would give a new file: 0o666 less the umask, which can only be read by setting it.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask
