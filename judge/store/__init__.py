"""The store: one SQLite file (sqlite-utils) holding runs, answers, sources, claims,
verdicts, checks, every model call, review queues, reviews and adjudications. WAL mode, short
transactions, a busy timeout, so that a batch in the CLI and a reviewer on the web can write
at the same time. All SQL of the package lives in this package, one module per group of
tables; ordered migrations in :mod:`judge.store.migrations`.

May import records, verdicts and fingerprint only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judge.store.admission import Admission, AdmissionMixin, AnswerConflict, Lease
from judge.store.answers import AnswersMixin
from judge.store.base import StoreError, dumps, now, record_sha, verdict_id
from judge.store.batches import BatchesMixin
from judge.store.calls import CallsMixin
from judge.store.operating import OperatingPointsMixin
from judge.store.queues import QueuesMixin
from judge.store.reviews import ReviewsMixin
from judge.store.runs import RunsMixin
from judge.store.sessions import SessionsMixin

__all__ = ["Admission", "AnswerConflict", "Lease", "Store", "StoreError", "dumps", "now",
           "opened", "record_sha", "verdict_id"]


class Store(AnswersMixin, RunsMixin, CallsMixin, ReviewsMixin, QueuesMixin, AdmissionMixin,
            OperatingPointsMixin, SessionsMixin, BatchesMixin):
    """One SQLite file. Open with ``Store.open(path)`` (``":memory:"`` for a store that lives
    as long as the object); migrations are applied on open."""


@contextmanager
def opened(db: str | Path | Store | None) -> Iterator[Store]:
    """The ``db`` argument of the public functions as a store: an open :class:`Store` as it
    is (left open), a path opened for the block and closed after it, None an in-memory store
    that lives as long as the block."""
    if isinstance(db, Store):
        yield db
        return
    store = Store.open(":memory:" if db is None else db)
    try:
        yield store
    finally:
        store.close()
