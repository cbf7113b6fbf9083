"""Answer leases: concurrent runs on one store share the work instead of repeating calls.

A run *claims* an answer (for its judge version) before judging it, in one write transaction
that also refuses an answer id stored, or being judged by another run, with different content
(whichever run comes first wins). An answer another live run holds is skipped and picked up
later: when that run has stored it, it is taken from the store; when its lease expired or its
process died (same host), it is claimed again. Leases are renewed while a run works and
released when it ends.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Literal

from judge.records import AnswerRecord
from judge.store.base import StoreBase, record_sha

#: How long a lease lasts without renewal (a run renews its leases well before).
LEASE_SECONDS = 120.0

Claim = Literal["claimed", "done", "held"]


def new_holder() -> str:
    """A name for one run of one process (leases are held per holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class AnswerConflict(ValueError):
    """An answer id already stored (or being judged) with different content."""


def conflict_message(answer_id: str) -> str:
    return (f"answer id {answer_id!r} is already stored with different content; "
            "give changed answers a new id")


class LeasesMixin(StoreBase):
    def _live(self, row: dict[str, object]) -> bool:
        if float(row["expires_at"] or 0) < time.time():  # type: ignore[arg-type]
            return False
        if row["host"] == socket.gethostname() and isinstance(row["pid"], int):
            return _pid_alive(row["pid"])
        return True

    def stored_sha(self, answer_id: str) -> str | None:
        row = self.one("select record_sha256 from answers where id = ?", [answer_id])
        return row["record_sha256"] if row else None

    def claim_answer(
        self, run_id: str, holder: str, judge_version: str, record: AnswerRecord,
        redo_errors: bool = False, ttl: float = LEASE_SECONDS,
    ) -> Claim:
        """Claim an answer for judging, atomically. ``done``: the judge version already has
        it (with ``redo_errors``: has it without a ``judge_error``); ``held``: another live
        run is judging it. Raises :class:`AnswerConflict` when the id is stored or held with
        different content."""
        sha, answer_id = record_sha(record), record.answer_id
        with self.transaction():
            stored = self.stored_sha(answer_id)
            if stored is not None and stored != sha:
                raise AnswerConflict(conflict_message(answer_id))
            for row in self.rows("select * from answer_leases where answer_id = ?", [answer_id]):
                if row["record_sha256"] != sha and row["holder"] != holder and self._live(row):
                    raise AnswerConflict(conflict_message(answer_id))
            if self._done(judge_version, answer_id, redo_errors):
                return "done"
            lease = self.one(
                "select * from answer_leases where judge_version = ? and answer_id = ?",
                [judge_version, answer_id],
            )
            if lease is not None and lease["holder"] != holder and self._live(lease):
                return "held"
            self.db.table("answer_leases").insert({
                "judge_version": judge_version, "answer_id": answer_id, "record_sha256": sha,
                "run_id": run_id, "holder": holder, "host": socket.gethostname(),
                "pid": os.getpid(), "expires_at": time.time() + ttl,
            }, replace=True)
        return "claimed"

    def _done(self, judge_version: str, answer_id: str, redo_errors: bool) -> bool:
        done = self.one(
            "select 1 from run_answers ra join runs r on r.id = ra.run_id "
            "where r.judge_version = ? and ra.answer_id = ? "
            "and ra.status in ('judged', 'refused') limit 1",
            [judge_version, answer_id],
        ) is not None
        return done and not (redo_errors and self.has_judge_errors(judge_version, answer_id))

    def has_judge_errors(self, judge_version: str, answer_id: str) -> bool:
        return self.one(
            "select 1 from verdicts v join answer_claims ac on ac.claim_id = v.claim_id "
            "and ac.judge_version = v.judge_version and ac.answer_id = v.answer_id "
            "where v.judge_version = ? and v.answer_id = ? and v.label = 'judge_error' limit 1",
            [judge_version, answer_id],
        ) is not None

    def error_calls(self, judge_version: str, answer_id: str) -> set[str]:
        """The calls behind an answer's ``judge_error`` verdicts (the last call of each: the
        one that failed), to be made again by a retry."""
        import json

        out: set[str] = set()
        for row in self.db.query(
            "select v.call_ids from verdicts v join answer_claims ac on ac.claim_id = v.claim_id "
            "and ac.judge_version = v.judge_version and ac.answer_id = v.answer_id "
            "where v.judge_version = ? and v.answer_id = ? and v.label = 'judge_error'",
            [judge_version, answer_id],
        ):
            ids = json.loads(row["call_ids"] or "[]")
            if ids:
                out.add(ids[-1])
        return out

    def renew_leases(self, holder: str, ttl: float = LEASE_SECONDS) -> None:
        with self.transaction():
            self.db.execute("update answer_leases set expires_at = ? where holder = ?",
                            [time.time() + ttl, holder])

    def release_leases(self, holder: str, answer_id: str | None = None) -> None:
        with self.transaction():
            if answer_id is None:
                self.db.execute("delete from answer_leases where holder = ?", [holder])
            else:
                self.db.execute("delete from answer_leases where holder = ? and answer_id = ?",
                                [holder, answer_id])
