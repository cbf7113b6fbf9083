"""The bytes of a model file: sha256 markers beside it, and a hash taken once per process.

A cached model file is trusted only as far as its bytes: :func:`digest` hashes a file the
first time a process loads it (again if its size or modification time changes), and the
caller compares the result with the identity it promises (the packaged model's sha256 in
the judge version; for a cut, the hash pinned in the package or computed from the verified
model). ``<file>.sha256`` markers (``sha256sum`` format) beside the assembled model only save
the cost of hashing it again to find out whether it is whole: its bytes are still hashed
once a process and compared with the pinned sha256, never with the marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

#: ``progress(done_bytes, total_bytes)``
ProgressCallback = Callable[[int, int], None]

_CHUNK = 8 * 1024 * 1024
_LOCK = threading.Lock()
#: (path, size, mtime_ns, inode) -> sha256 of the files this process has hashed
_SEEN: dict[tuple[str, int, int, int], str] = {}


def marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def read_marker(path: Path) -> str | None:
    try:
        text = marker_path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    fields = text.split()
    return fields[0].lower() if fields else None


def write_marker(path: Path, sha256: str) -> None:
    """Write ``<sha256>  <name>`` (``sha256sum -c`` compatible), atomically."""
    marker = marker_path(path)
    tmp = marker.with_name(f".{marker.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(f"{sha256}  {path.name}\n", encoding="ascii")
        os.replace(tmp, marker)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def sha256_file(path: Path, progress: ProgressCallback | None = None) -> str:
    total = path.stat().st_size
    hasher = hashlib.sha256()
    done = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            hasher.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return hasher.hexdigest()


def _key(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino


def digest(path: Path, progress: ProgressCallback | None = None) -> str:
    """The file's sha256, hashed the first time this process asks (and again when the file's
    size or modification time changed since, or another file took its name)."""
    key = _key(path)
    with _LOCK:
        known = _SEEN.get(key)
    if known is not None:
        return known
    sha = sha256_file(path, progress)
    with _LOCK:
        _SEEN[key] = sha
    return sha


def remember(path: Path, sha256: str) -> None:
    """Record the hash of a file this process has just written (hashed while writing)."""
    with _LOCK:
        _SEEN[_key(path)] = sha256


def forget() -> None:
    """Hash every file again on its next load (tests; a long-lived process after an edit)."""
    with _LOCK:
        _SEEN.clear()


def read_text(path: Path) -> str | None:
    """A small record file's text (None: missing or unreadable)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def remove_cut(dest: Path) -> None:
    """Delete a model cut, the record of what it was cut from, and a marker an older version
    wrote beside it (never read)."""
    for path in (dest, dest.with_name(dest.name + ".source"), marker_path(dest)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
