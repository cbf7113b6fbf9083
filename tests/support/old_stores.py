"""A store as an older release left it: the migrations up to one, recorded as applied, so a
test can add the rows that release wrote and check that opening it upgrades in order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from judge.store.migrations import MIGRATIONS


@contextmanager
def store_upto(path: Path, last: str, applied_at: str = "2026-11-01T00:00:00"
               ) -> Iterator[sqlite_utils.Database]:
    """The database at ``path`` with every migration up to ``last`` applied and recorded;
    committed and closed when the block ends."""
    names = [n for n, _ in MIGRATIONS]
    upto = names.index(last)
    conn = sqlite3.connect(path)
    db = sqlite_utils.Database(conn)
    try:
        db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
        for name, fn in MIGRATIONS[:upto + 1]:
            fn(db)
            db.table("_migrations").insert({"name": name, "applied_at": applied_at})
        yield db
        conn.commit()
    finally:
        conn.close()
