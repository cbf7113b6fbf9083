"""The sha256 of the embedded runtime's saved instructions' states
(:mod:`judge.models.prefix_files`), recorded in the store when the instructions were
evaluated and saved, by the state file's name: whoever can rewrite the state folder cannot
vouch for what they wrote there.

The runtime's threads read and write it while the run's connection is in use, so each call
opens a connection of its own, to a store that exists (never creating one), and gives up
after a short wait: a state that cannot be checked is evaluated again, which costs only time.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from judge.store.base import now

#: seconds a lookup or a record waits for the run's writes
TIMEOUT_S = 5.0


class PrefixStates:
    """The ``prefix_states`` table of the store at ``path``
    (a :class:`judge.models.prefix_files.Ledger`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path).resolve()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"{self.path.as_uri()}?mode=rw", uri=True, timeout=TIMEOUT_S,
                               check_same_thread=False)

    def get(self, name: str) -> str | None:
        """The sha256 recorded for the state file ``name``, or ``None``."""
        with closing(self._connect()) as conn:
            row = conn.execute("select sha256 from prefix_states where name = ?",
                               [name]).fetchone()
        return str(row[0]) if row else None

    def put(self, name: str, sha256: str) -> None:
        """Record ``sha256`` for the state file ``name`` (replacing what was recorded)."""
        with closing(self._connect()) as conn, conn:
            conn.execute("insert or replace into prefix_states (name, sha256, recorded_at) "
                         "values (?, ?, ?)", [name, sha256, now()])
