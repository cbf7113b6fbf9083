"""Every model call, stored whole as soon as it returns."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judge.masking import mask
from judge.store.base import StoreBase, dumps, now


class CallsMixin(StoreBase):
    def get_call(self, call_id: str) -> dict[str, Any] | None:
        return next(self.db.query("select * from calls where id = ?", [call_id]), None)

    def save_call(self, row: dict[str, Any], attempts: Iterable[dict[str, Any]] = ()) -> None:
        """Calls are saved as soon as they return, so a killed run loses none. A failed
        call is replaced by a later successful one with the same key (the earlier row is kept
        in ``superseded_calls``); its HTTP attempts are appended (every attempt of every try
        stays)."""
        row = {k: (dumps(v) if isinstance(v, dict | list) else v) for k, v in row.items()}
        if row.get("error"):  # secrets never stored (a provider may echo the key)
            row["error"] = mask(row["error"])
        attempts = [{**a, "error": mask(a["error"])} if a.get("error") else a
                    for a in attempts]
        with self.transaction():
            prior = self.get_call(row["id"])
            if prior is not None:  # the earlier outcome of the same call stays on record
                self.db.table("superseded_calls").insert({
                    "id": row["id"], "row": dumps(prior), "superseded_at": now(),
                    "run_id": row.get("run_id")})
            self.insert_rows("calls", [row], "replace")
            self.insert_rows("call_attempts", attempts)

    def call_attempts(self, call_id: str) -> list[dict[str, Any]]:
        """Every HTTP attempt of a call, oldest first."""
        return self.rows("select * from call_attempts where call_id = ? order by id", [call_id])


    def call_rows(self, call_ids: Iterable[str], columns: str = "*") -> Iterator[dict[str, Any]]:
        """The stored calls with these ids (in chunks, any number of ids)."""
        yield from self.rows_in(f"select {columns} from calls where id in ({{marks}})",
                                sorted(set(call_ids)))


class CallReader:
    """Stored calls read from a store file opened read-only (no migration, no write): how a
    Ray worker on the driver's machine serves the calls a run already made. Returns None for
    every call when the file cannot be opened (a worker on another machine)."""

    def __init__(self, path: Path | str | None) -> None:
        self.conn: sqlite3.Connection | None = None
        if path is not None and Path(path).is_file():
            try:
                self.conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True,
                                            check_same_thread=False)
                self.conn.row_factory = sqlite3.Row
            except sqlite3.Error:
                self.conn = None

    def get_call(self, call_id: str) -> dict[str, Any] | None:
        if self.conn is None:
            return None
        try:
            row = self.conn.execute("select * from calls where id = ?", [call_id]).fetchone()
        except sqlite3.Error:
            return None
        return dict(row) if row is not None else None
