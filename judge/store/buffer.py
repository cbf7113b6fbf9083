"""Batched writes for a run: model calls and finished answers go to the store together, in one
transaction per :data:`ANSWERS` answers or per :data:`SECONDS` second, and at the end.

What a run reports as done (its progress callback) is called only once the answer is committed,
so a ``kill -9`` never loses an answer that was reported, and never half-writes one (each answer
is its own savepoint inside the transaction: all of it or none). Calls made since the last
commit are lost on a kill (at most about a second's worth) and made again on resume; answers
not committed are judged again, and their calls that were committed are served from the store.
While buffered, a call is served to the client from the buffer, so nothing is asked twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from judge.store.base import dumps

if TYPE_CHECKING:
    from judge.store import Store

#: commit after this many finished answers ...
ANSWERS = 32
#: ... or this many seconds after the last commit, whichever comes first
SECONDS = 1.0


class WriteBuffer:
    """The store as the model client and the runner write to it during a run."""

    def __init__(self, store: Store, answers: int = ANSWERS, seconds: float = SECONDS) -> None:
        self.store = store
        self.answers = answers
        self.seconds = seconds
        self._calls: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self._results: list[tuple[Callable[[], None], Callable[[], None] | None]] = []
        self._last = time.monotonic()
        self.commits = 0

    # -- the model client's side (judge.models.client.CallStore) ----------------------------

    def get_call(self, call_id: str) -> dict[str, Any] | None:
        pending = self._calls.get(call_id)
        if pending is not None:
            return {k: (dumps(v) if isinstance(v, dict | list) else v)
                    for k, v in pending[0].items()}
        return self.store.get_call(call_id)

    def save_call(self, row: dict[str, Any], attempts: Iterable[dict[str, Any]] = ()) -> None:
        previous = self._calls.get(row["id"])
        kept = previous[1] if previous else []
        self._calls[row["id"]] = (dict(row), [*kept, *attempts])
        self._maybe_flush()

    # -- the runner's side --------------------------------------------------------------------

    def add_answer(self, write: Callable[[], None], done: Callable[[], None] | None = None) -> None:
        """``write()`` stores one answer (one savepoint); ``done()`` runs once it is committed."""
        self._results.append((write, done))
        self._maybe_flush()

    def flush_if_due(self) -> None:
        """Commit when :attr:`seconds` have passed since the last commit (the run calls it on
        a timer: a finished answer is committed within about that long whatever the next
        answer does)."""
        if time.monotonic() - self._last >= self.seconds:
            self.flush()

    def _maybe_flush(self) -> None:
        if (len(self._results) >= self.answers
                or time.monotonic() - self._last >= self.seconds):
            self.flush()

    def flush(self) -> None:
        """Commit everything buffered in one transaction, then report the answers done. An
        answer whose write fails is rolled back alone (its savepoint); the others are
        committed and reported, then the first failure is raised."""
        calls, results = self._calls, self._results
        self._calls, self._results = {}, []
        self._last = time.monotonic()
        if not calls and not results:
            return
        failure: BaseException | None = None
        stored = []
        with self.store.transaction():
            for row, attempts in calls.values():
                self.store.save_call(row, attempts)
            for write, done in results:
                try:
                    with self.store.transaction():  # a savepoint: this answer or nothing
                        write()
                except Exception as exc:
                    failure = failure or exc
                else:
                    stored.append(done)
        self.commits += 1
        for done in stored:
            if done is not None:
                done()
        if failure is not None:
            raise failure
