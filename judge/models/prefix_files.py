"""The fixed instructions' KV state kept on disk, so that a new process does not evaluate them
again (``reuse_instructions``).

With ``reuse_instructions`` a split is evaluated on top of its prompt's fixed instructions
(:mod:`judge.models.shared_prefix`): about 540 tokens that the first split of every process
evaluated from an empty cache, some 8 seconds on two cores (0.4–0.7 s a claim on ``make
run``'s sample).
After that first evaluation the slot's state (its tokens and their KV cache) is saved with
llama.cpp's slot save action into ``<cache>/prefixes/``, under a name derived from the
instructions' text and from what computed them (the runtime's fingerprint: xllamacpp's
version and the model file's sha256; its threads; the CPU's architecture and feature flags).
A later process restores it instead of evaluating, then cuts back to exactly those
instructions as before, which evaluates their last token once more: the cache then holds the
numbers the cold evaluation gives, so an output is still a function of its prompt alone
(a real-model test compares a split on restored instructions with one on evaluated ones).

A file is written under a temporary name and renamed, and the sha256 of its bytes is recorded
where whoever can write the folder cannot vouch for what they wrote: in the runtime's memory
and in the store of the run (:class:`judge.store.prefix_states.PrefixStates`, which a run
registers with :func:`record_in`), never beside the file. A file is restored only when its
bytes hash to that record (the runtime checks a restored state's tokens, not its numbers); a
file without a record (saved by a run on another store, or put there), whose bytes differ from
it (a disk error, an edit), that cannot be restored, or whose tokens do not line up with the
instructions, is deleted and the instructions are evaluated as before, then saved and recorded
anew.
``CLAIM_JUDGE_PREFIX_FILES`` names another folder, or turns the files off with ``0`` (the
cost is only time).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from judge.models.model_bytes import marker_path, sha256_file

ENV_PREFIX_FILES = "CLAIM_JUDGE_PREFIX_FILES"
#: the folder beside the model files
FOLDER = "prefixes"

#: ``action(slot, "save" | "restore", filename)``: llama.cpp's slot action, its answer as a dict
SlotAction = Callable[[int, str, str], dict[str, Any]]


class Ledger(Protocol):
    """Where the sha256 of each saved state is recorded, by file name, out of the folder's
    reach (the store: :class:`judge.store.prefix_states.PrefixStates`)."""

    def get(self, name: str) -> str | None: ...

    def put(self, name: str, sha256: str) -> None: ...


_LOCK = threading.Lock()
_LEDGER: Ledger | None = None


def record_in(ledger: Ledger | None) -> None:
    """Record the states saved from now on in ``ledger``, and restore only those it (or the
    runtime's memory) holds: a run calls this with its store (``None``: memory only)."""
    global _LEDGER
    with _LOCK:
        _LEDGER = ledger


def registered() -> Ledger | None:
    """The ledger :func:`record_in` was last given."""
    with _LOCK:
        return _LEDGER


def folder(cache: Path) -> Path | None:
    """Where instructions' states are kept: ``$CLAIM_JUDGE_PREFIX_FILES`` when it names a
    folder, ``None`` when it is ``0``, ``false`` or ``no`` (not kept), else ``prefixes/`` in
    the model cache ``cache``."""
    value = os.environ.get(ENV_PREFIX_FILES, "").strip()
    if value.lower() in ("0", "false", "no"):
        return None
    if value and value.lower() not in ("1", "true", "yes"):
        return Path(value).expanduser()
    return cache / FOLDER


def cpu_identity() -> str:
    """The CPU's architecture and, on Linux, its feature flags: the kernels llama.cpp picks."""
    flags = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith(("flags", "Features")):
                flags = line.split(":", 1)[-1].strip()
                break
    return f"{platform.machine()}:{hashlib.sha256(flags.encode()).hexdigest()[:16]}"


class PrefixFiles:
    """The saved states of one runtime, in ``folder``, restored and saved through ``action``,
    their hashes recorded in the runtime's memory and in ``ledger()`` (default: the one a run
    registered, :func:`record_in`)."""

    def __init__(self, folder: Path, identity: str, action: SlotAction,
                 ledger: Callable[[], Ledger | None] = registered) -> None:
        self.folder = folder
        self.identity = identity
        self._action = action
        self._ledger = ledger
        #: name -> sha256 of the states this runtime evaluated and saved itself
        self._saved: dict[str, str] = {}

    def name(self, text: str) -> str:
        """The file name of the state holding exactly ``text`` on this runtime."""
        key = hashlib.sha256(f"{self.identity}\0{text}".encode()).hexdigest()[:32]
        return f"instructions-{key}.bin"

    def restore(self, slot: int, text: str) -> bool:
        """Load the saved state of ``text`` into ``slot``; ``False`` when there is none, its
        bytes are not those recorded when it was saved (or nothing recorded it), or it could
        not be loaded (then it is deleted)."""
        name = self.name(text)
        path = self.folder / name
        if not path.is_file():
            return False
        expected = self._recorded(name)
        try:
            intact = expected is not None and sha256_file(path) == expected
        except OSError:
            intact = False
        if not intact:  # changed, or not saved by a run that recorded it
            self.discard(text)
            return False
        try:
            result = self._action(slot, "restore", name)
        except Exception:  # noqa: BLE001 - a cache: any failure means evaluate as before
            result = {"error": "restore failed"}
        if "error" in result or not result.get("n_restored"):
            self.discard(text)
            return False
        return True

    def save(self, slot: int, text: str) -> None:
        """Save ``slot``'s state (holding exactly ``text``) for later processes; a failure
        only costs them the evaluation."""
        name = self.name(text)
        temporary = f"{name}.{uuid.uuid4().hex}.tmp"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            result = self._action(slot, "save", temporary)
            if "error" not in result and result.get("n_saved"):
                sha256 = sha256_file(self.folder / temporary)
                os.replace(self.folder / temporary, self.folder / name)
                self._saved[name] = sha256
                ledger = self._ledger()
                if ledger is not None:
                    ledger.put(name, sha256)
        except Exception:  # noqa: BLE001, S110 - a cache: nothing to report to the run
            pass
        with contextlib.suppress(OSError):
            (self.folder / temporary).unlink()

    def _recorded(self, name: str) -> str | None:
        """The sha256 recorded when the state ``name`` was saved: by this runtime, else in
        the ledger (``None``: nothing recorded, or the ledger cannot be read)."""
        if name in self._saved:
            return self._saved[name]
        ledger = self._ledger()
        try:
            return ledger.get(name) if ledger is not None else None
        except Exception:  # noqa: BLE001 - not recorded as far as we can tell: evaluate
            return None

    def discard(self, text: str) -> None:
        """Delete the saved state of ``text`` (not recorded, changed, did not restore or did
        not line up), and a marker an older version wrote beside it."""
        path = self.folder / self.name(text)
        self._saved.pop(path.name, None)
        for stale in (path, marker_path(path)):
            with contextlib.suppress(OSError):
                stale.unlink()

