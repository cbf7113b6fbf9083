"""Applying the store's migrations (:mod:`judge.store.migrations`, in their order) under the
write lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import sqlite_utils

from judge.store.migrations import MIGRATIONS


@contextmanager
def write_transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (a savepoint when already inside a transaction)."""
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def apply_migrations(db: sqlite_utils.Database) -> list[str]:
    """Apply pending migrations in order, under the write lock, so two processes opening a
    new file at once do not both create the tables; return the names applied."""
    applied: list[str] = []
    with write_transaction(db):
        table = db.table("_migrations")
        if not table.exists():
            table.create({"name": str, "applied_at": str}, pk="name")
        done = {row["name"] for row in table.rows}
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            with db.atomic():
                fn(db)
                table.insert({"name": name, "applied_at": datetime.now(UTC).isoformat()})
            applied.append(name)
    return applied
