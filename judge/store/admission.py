"""Admission: what a run does with one answer record, decided in one place, in one transaction.

:meth:`AdmissionMixin.admit` answers, for a record and a judge version:

- ``conflict``: the id is stored (or, when claiming, being judged by another live run) with
  different content; whichever run comes first wins, the other reports a rejected line;
- ``misruled``: the judge version decided the answer with another decision rule than its
  domain selects now (its stored verdicts would be reused otherwise); a rejected line;
- ``done``: the judge version has the answer (with ``retry_errors``: has it without a
  ``judge_error``); the run takes it from the store;
- ``held``: another live run is judging it (claiming only); the run looks again later;
- ``judge``: the run judges it. ``redo`` when this replaces the version's verdicts of the
  answer that include a ``judge_error`` (``retry_errors``), with ``refresh`` the calls behind
  those errors, to be made again.

A run first *looks* at its whole input (no lease: answers already stored are taken at once,
the rest counted), then *claims* each answer just before judging it: the same decision, with
a lease (:mod:`judge.store.leases`) taken in the same write transaction, so concurrent runs
on one store share the work. The answer's result is then written in one transaction
(:meth:`judge.store.answers.AnswersMixin.save_answer_result`), which refuses the id once more
with the same :func:`content_conflict` inside the write, because a lease can lapse.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Literal

from judge.records import AnswerRecord
from judge.store.base import record_sha
from judge.store.leases import LEASE_SECONDS, LeasesMixin

Decision = Literal["judge", "done", "held", "conflict", "misruled"]


class AnswerConflict(ValueError):
    """An answer id already stored (or being judged) with different content."""


def conflict_message(answer_id: str) -> str:
    return (f"answer id {answer_id!r} is already stored with different content; "
            "give changed answers a new id")


@dataclass(frozen=True)
class Lease:
    """A claim's terms: the run and holder that take the answer, for ``ttl`` seconds."""

    run_id: str
    holder: str
    ttl: float = LEASE_SECONDS


@dataclass(frozen=True)
class Admission:
    """The decision on one record (see the module docstring)."""

    decision: Decision
    #: why the record is rejected (``conflict``, ``misruled``)
    reason: str | None = None
    #: ``judge``: the answer's stored verdicts of the version include a ``judge_error``; the
    #: run judges it again and its result replaces them
    redo: bool = False
    #: ``redo``: the calls behind those errors (the last call of each: the one that failed)
    refresh: frozenset[str] = frozenset()

    @property
    def rejected(self) -> bool:
        return self.decision in ("conflict", "misruled")


class AdmissionMixin(LeasesMixin):
    def admit(
        self, record: AnswerRecord, judge_version: str, *, retry_errors: bool = False,
        rule: str | None = None, domain: str | None = None, lease: Lease | None = None,
    ) -> Admission:
        """Decide what a run does with ``record`` (see the module docstring). ``rule``: the
        decision rule the answer's ``domain`` selects, when the config has domain rules.
        ``lease``: claim the answer for judging (a write transaction); None: only look."""
        if lease is None:  # reads only: no write lock for a look
            return self._admit(record, judge_version, retry_errors, rule, domain, None)
        with self.transaction():
            return self._admit(record, judge_version, retry_errors, rule, domain, lease)

    def _admit(
        self, record: AnswerRecord, judge_version: str, retry_errors: bool,
        rule: str | None, domain: str | None, lease: Lease | None,
    ) -> Admission:
        sha, answer_id = record_sha(record), record.answer_id
        conflict = self.content_conflict(record, sha, lease.holder if lease else None)
        if conflict:
            return Admission("conflict", conflict)
        if rule is not None:
            stored = {r["rule"] for r in self.db.query(
                "select distinct rule from verdicts where judge_version = ? and answer_id = ? "
                "and rule is not null", [judge_version, answer_id])}
            if stored and stored != {rule}:
                return Admission("misruled", (
                    f"answer {answer_id!r} was judged by {judge_version} with rule "
                    f"{', '.join(sorted(stored))}; its domain {domain!r} now selects rule "
                    f"{rule!r}; give the answer a new id to judge it again"))
        stored_done = self.answer_done(judge_version, answer_id)
        errors = stored_done and retry_errors and self.has_judge_errors(judge_version, answer_id)
        if stored_done and not errors:
            return Admission("done")
        if lease is not None:
            held = self.one(
                "select * from answer_leases where judge_version = ? and answer_id = ?",
                [judge_version, answer_id])
            if held is not None and held["holder"] != lease.holder and self._live(held):
                return Admission("held")
            self.db.table("answer_leases").insert({
                "judge_version": judge_version, "answer_id": answer_id, "record_sha256": sha,
                "run_id": lease.run_id, "holder": lease.holder, "host": socket.gethostname(),
                "pid": os.getpid(), "expires_at": time.time() + lease.ttl,
            }, replace=True)
        if not errors:
            return Admission("judge")
        return Admission("judge", redo=True,
                         refresh=frozenset(self._error_calls(judge_version, answer_id)))

    def content_conflict(
        self, record: AnswerRecord, sha: str | None = None, holder: str | None = None
    ) -> str | None:
        """Why ``record`` cannot be stored under its id: the id is stored with different
        content or (given the ``holder`` asking) another live run is judging it with
        different content. None when it can."""
        sha = sha or record_sha(record)
        stored = self.one("select record_sha256 from answers where id = ?", [record.answer_id])
        if stored is not None and stored["record_sha256"] != sha:
            return conflict_message(record.answer_id)
        if holder is not None:
            for row in self.rows("select * from answer_leases where answer_id = ?",
                                 [record.answer_id]):
                if row["record_sha256"] != sha and row["holder"] != holder and self._live(row):
                    return conflict_message(record.answer_id)
        return None

    def answer_done(self, judge_version: str, answer_id: str) -> bool:
        """Whether a run of the judge version has judged (or refused) the answer."""
        return self.one(
            "select 1 from run_answers ra join runs r on r.id = ra.run_id "
            "where r.judge_version = ? and ra.answer_id = ? "
            "and ra.status in ('judged', 'refused') limit 1",
            [judge_version, answer_id],
        ) is not None

    def has_judge_errors(self, judge_version: str, answer_id: str) -> bool:
        return self.one(
            "select 1 from verdicts v join answer_claims ac on ac.claim_id = v.claim_id "
            "and ac.judge_version = v.judge_version and ac.answer_id = v.answer_id "
            "where v.judge_version = ? and v.answer_id = ? and v.label = 'judge_error' limit 1",
            [judge_version, answer_id],
        ) is not None

    def _error_calls(self, judge_version: str, answer_id: str) -> set[str]:
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
