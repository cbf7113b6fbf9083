"""Output files that cannot destroy an input: every file a command writes goes through here.

:func:`check_output` refuses a path that is the store (or its ``-wal``, ``-shm`` or
``-journal`` file) or an input of the command, after resolving symlinks and relative parts
(and hard links, for files that exist), before anything is written. :func:`atomic_text` and
:func:`atomic_path` write to a temporary file in the same folder and rename it into place,
so an interrupted export never leaves a half-written file where a good one was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

#: Files SQLite keeps beside a database.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class OutputError(ValueError):
    """An output path that would overwrite the store or an input; nothing was written."""


def store_files(db: str | Path) -> list[Path]:
    """The database file and the files SQLite keeps beside it."""
    path = Path(db)
    return [path, *(path.with_name(path.name + side) for side in SQLITE_SIDE_FILES)]


def _same(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(output: str | Path, *, db: str | Path | None = None,
                 inputs: Iterable[str | Path | None] = ()) -> Path:
    """``output`` when writing it cannot destroy the store ``db`` (with its side files) or
    one of ``inputs``; else :class:`OutputError` naming what it would overwrite."""
    out = Path(output)
    if out.exists() and out.is_dir():
        raise OutputError(f"output {out} is a folder; give a file name")
    if db is not None:
        for path in store_files(db):
            if _same(out, path):
                what = "the store" if path == Path(db) else f"the store's {path.name} file"
                raise OutputError(
                    f"output {out} is {what} ({db}); writing it would destroy every verdict "
                    "and review: choose another file")
    for given in inputs:
        if given is not None and _same(out, Path(given)):
            raise OutputError(f"output {out} is the input file {given}; choose another file")
    return out


@contextmanager
def atomic_path(output: str | Path) -> Iterator[Path]:
    """A temporary path beside ``output`` to write to; renamed onto ``output`` when the block
    ends without an error, removed otherwise."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if out.exists():  # keep the permissions of the file replaced
            os.chmod(tmp, out.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_text(output: str | Path, newline: str | None = None) -> Iterator[IO[str]]:
    """A UTF-8 text file written to a temporary file and renamed onto ``output`` at the end."""
    with atomic_path(output) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as fh:
        yield fh


def write_text(output: str | Path, text: str | Iterable[str], *, db: str | Path | None = None,
               inputs: Iterable[str | Path | None] = (), newline: str | None = None) -> Path:
    """Check ``output`` (:func:`check_output`), then write ``text`` (a string or chunks) to it
    atomically."""
    out = check_output(output, db=db, inputs=inputs)
    with atomic_text(out, newline=newline) as fh:
        fh.writelines([text] if isinstance(text, str) else text)
    return out
