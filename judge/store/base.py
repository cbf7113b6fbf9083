"""The store's connection, transactions and the helpers every table module uses."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self

import sqlite_utils

from judge.hashing import content_hash
from judge.records import AnswerRecord
from judge.store.applying import apply_migrations, write_transaction

BUSY_TIMEOUT_MS = 30_000


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def dumps(value: Any) -> str:
    """Canonical JSON for a JSON column."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def verdict_id(judge_version: str, claim_id: str) -> str:
    return "v-" + content_hash([judge_version, claim_id])[:20]


def record_sha(record: AnswerRecord) -> str:
    return content_hash(record.model_dump(mode="json", by_alias=True))


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL. On a new file opened by several processes at once, SQLite
    answers "database is locked" to the switch without calling the busy handler, so wait and
    retry here, within the busy timeout, until the file is in WAL (whoever switched it)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode = wal")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


#: Values bound per query of :meth:`StoreBase.rows_in`.
IN_CHUNK = 500


class StoreError(RuntimeError):
    pass


def _column(value: Any) -> Any:
    """A value as sqlite-utils stores it: dicts and lists as JSON, the rest as it is."""
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=repr, ensure_ascii=False)
    return value


class StoreBase:
    """One SQLite file (or ``:memory:``). Open with ``Store.open(path)``; migrations are
    applied on open."""

    def __init__(self, db: sqlite_utils.Database, path: Path | None = None) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, path: Path | str) -> Self:
        memory = str(path) == ":memory:"
        path = Path(path)
        if not memory and path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        db = sqlite_utils.Database(conn)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not memory:
            _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = OFF")
        apply_migrations(db)
        return cls(db, None if memory else path)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``: takes the write lock up front (waiting up to the
        busy timeout), so concurrent writers queue instead of failing on a lock upgrade.
        Nested use becomes a savepoint (sqlite-utils' own writes nest the same way)."""
        with write_transaction(self.db):
            yield

    def close(self) -> None:
        self.db.conn.close()

    def one(self, sql: str, params: list[Any] | None = None) -> dict[str, Any] | None:
        """The first row of a query, or None."""
        return next(self.db.query(sql, params or []), None)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        return list(self.db.query(sql, params or []))

    def rows_in(self, sql: str, values: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """Rows of ``sql``, whose ``{marks}`` stands for one placeholder per value of
        ``values``, queried in chunks within SQLite's limit on bound parameters (so any
        number of values)."""
        for start in range(0, len(values), IN_CHUNK):
            chunk = list(values[start:start + IN_CHUNK])
            yield from self.db.query(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def insert_rows(self, table: str, rows: Iterable[dict[str, Any]],
                    conflict: Literal["", "ignore", "replace"] = "") -> None:
        """``INSERT [OR IGNORE | OR REPLACE]`` of ``rows`` into an existing table in one
        statement: what sqlite-utils' ``insert_all`` does on the hot paths of a run (an
        answer's rows, a call's), without its per-call look at the table."""
        rows = list(rows)
        if not rows:
            return
        columns = list(dict.fromkeys(key for row in rows for key in row))
        verb = f"insert or {conflict}" if conflict else "insert"
        names = ", ".join(f"[{c}]" for c in columns)
        self.db.conn.executemany(
            f"{verb} into [{table}] ({names}) values ({', '.join('?' * len(columns))})",
            [[_column(row.get(c)) for c in columns] for row in rows])

    def count(self, sql: str, params: list[Any] | None = None) -> int:
        return int(self.db.execute(sql, params or []).fetchone()[0])
