"""A run's admission of its input, decided by the store's one admission
(:meth:`judge.store.admission.AdmissionMixin.admit`) for every path that judges (the public
functions, the CLI, the HTTP service, either executor).

Before a run starts, :meth:`Gate.screen` looks at every line once: rejected (invalid input, an
id stored with different content, an answer decided by another rule), taken from the store, or
to judge. Each answer to judge is then claimed (:meth:`Gate.claim`) just before it is judged:
the same decision, with a lease, so concurrent runs share the work and the first of two
contents under one id wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from judge.records import AcceptedLine, AnswerRecord, RejectedLine
from judge.store import Admission, Lease, Store
from judge.store.leases import LEASE_SECONDS, new_holder

if TYPE_CHECKING:
    from judge.runs.batch import BatchInput

#: record -> (the decision rule its domain selects when the config has domain rules, else
#: None; its domain)
RuleOf = Callable[[AnswerRecord], tuple[str | None, str | None]]


class InputRefused(ValueError):
    """Lines a strict run refuses before it starts: ``problems`` are (line, why) of the
    invalid lines and of the ids stored with different content."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        super().__init__(f"{len(problems)} input line(s) refused")
        self.problems = problems


@dataclass
class Screened:
    """A run's input after one look at each line."""

    #: (line, why) of every line the run rejects
    rejected: list[tuple[int, str]] = field(default_factory=list)
    #: (line, why) of the lines a strict run refuses: invalid input, an id conflict
    refused: list[tuple[int, str]] = field(default_factory=list)
    #: answers the judge version has: taken from the store
    done: list[AcceptedLine] = field(default_factory=list)
    #: answers to claim and judge
    todo: list[AcceptedLine] = field(default_factory=list)


class Gate:
    """One run's admissions: its judge version, whether it retries ``judge_error`` answers,
    the rule each record's domain selects, and the lease holder it claims as."""

    def __init__(self, store: Store, judge_version: str, rule_of: RuleOf,
                 retry_errors: bool = False, lease_s: float = LEASE_SECONDS) -> None:
        self.store, self.judge_version, self.rule_of = store, judge_version, rule_of
        self.retry_errors, self.lease_s = retry_errors, lease_s
        self.holder = new_holder()

    def _admit(self, record: AnswerRecord, lease: Lease | None) -> Admission:
        rule, domain = self.rule_of(record)
        return self.store.admit(record, self.judge_version, retry_errors=self.retry_errors,
                                rule=rule, domain=domain, lease=lease)

    def screen(self, items: Sequence[AcceptedLine | RejectedLine]) -> Screened:
        """Look at every line (no lease)."""
        out = Screened()
        for item in items:
            if isinstance(item, RejectedLine):
                out.rejected.append((item.line, item.error))
                out.refused.append((item.line, item.error))
                continue
            try:
                admission = self._admit(item.record, None)
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"[:1000]
                out.rejected.append(
                    (item.line, f"cannot check the record against the store: {why}"))
                continue
            if admission.rejected:
                out.rejected.append((item.line, admission.reason or admission.decision))
                if admission.decision == "conflict":
                    out.refused.append((item.line, admission.reason or admission.decision))
            elif admission.decision == "done":
                out.done.append(item)
            else:
                out.todo.append(item)
        return out

    def claim(self, record: AnswerRecord, run_id: str) -> Admission:
        """Claim ``record`` for judging (a lease when the decision is ``judge``)."""
        return self._admit(record, Lease(run_id, self.holder, self.lease_s))

    def renew(self) -> None:
        self.store.renew_leases(self.holder, self.lease_s)

    def release(self, answer_id: str | None = None) -> None:
        """Give up the lease on one answer (None: on every answer of this run)."""
        self.store.release_leases(self.holder, answer_id)


def read_uncited_as_stored(store: Store, batch: BatchInput,
                           read_uncited: Callable[[AnswerRecord], AnswerRecord]) -> BatchInput:
    """The batch's answers that cite nothing read by ``read_uncited`` (judge.split.uncited),
    except those the store holds under their id as given: an answer stored before the setting
    existed (or under ``missing_citation``) resumes as it was read then, instead of being
    refused as the same id with other content."""
    from dataclasses import replace

    from judge.store.base import record_sha

    def read(record: AnswerRecord) -> AnswerRecord:
        new = read_uncited(record)
        if new is record:
            return record
        stored = store.one("select record_sha256 from answers where id = ?", [record.answer_id])
        return record if stored and stored["record_sha256"] == record_sha(record) else new

    return replace(batch, items=[AcceptedLine(i.line, read(i.record))
                                 if isinstance(i, AcceptedLine) else i for i in batch.items])
