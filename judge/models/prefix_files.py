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

A file is written under a temporary name and renamed, then the sha256 of its bytes is written
beside it (``….bin.sha256``, :mod:`judge.models.model_bytes`'s markers), so a process never
restores a half-written one; a file whose bytes no longer hash to its marker (a disk error,
an edit: the KV numbers are not checked by the runtime, only its tokens), that cannot be
restored, or whose tokens do not line up with the instructions, is deleted and the
instructions are evaluated as before.
``CLAIM_JUDGE_PREFIX_FILES`` names another folder, or turns the files off with ``0`` (the
cost is only time).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.models.model_bytes import marker_path, read_marker, sha256_file, write_marker

ENV_PREFIX_FILES = "CLAIM_JUDGE_PREFIX_FILES"
#: the folder beside the model files
FOLDER = "prefixes"

#: ``action(slot, "save" | "restore", filename)``: llama.cpp's slot action, its answer as a dict
SlotAction = Callable[[int, str, str], dict[str, Any]]


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
    """The saved states of one runtime, in ``folder``, restored and saved through ``action``."""

    def __init__(self, folder: Path, identity: str, action: SlotAction) -> None:
        self.folder = folder
        self.identity = identity
        self._action = action

    def name(self, text: str) -> str:
        """The file name of the state holding exactly ``text`` on this runtime."""
        key = hashlib.sha256(f"{self.identity}\0{text}".encode()).hexdigest()[:32]
        return f"instructions-{key}.bin"

    def restore(self, slot: int, text: str) -> bool:
        """Load the saved state of ``text`` into ``slot``; ``False`` when there is none, its
        bytes are not those saved (its ``.sha256``) or it could not be loaded (then it is
        deleted)."""
        name = self.name(text)
        path = self.folder / name
        if not path.is_file():
            return False
        try:
            intact = sha256_file(path) == read_marker(path)
        except OSError:
            intact = False
        if not intact:  # changed, or written by a process that died before its marker
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
                write_marker(self.folder / name, sha256)
        except Exception:  # noqa: BLE001, S110 - a cache: nothing to report to the run
            pass
        with contextlib.suppress(OSError):
            (self.folder / temporary).unlink()

    def discard(self, text: str) -> None:
        """Delete the saved state of ``text`` (it did not restore or did not line up)."""
        path = self.folder / self.name(text)
        for stale in (path, marker_path(path)):
            with contextlib.suppress(OSError):
                stale.unlink()

