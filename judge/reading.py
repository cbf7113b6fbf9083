"""One view of a stored answer: its text, what the runs said of it (statuses, a refusal, the
sentences the split skipped) and a verdict per claim with the claim's citations.

:func:`answer_view` builds it from a store; ``judge show`` prints it, the HTTP service's
``/v1/answers/{id}/verdicts`` returns it, and :func:`judge.api.judge_answers` takes the
verdicts of its results from it. :func:`judge.answer` is the public entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_serializer

from judge.errors import NotFound
from judge.records import Citation
from judge.store import Store, opened
from judge.verdicts import Verdict


class ClaimVerdict(Verdict):
    """A verdict with what the store keeps of its claim: the citations, how the claim came to
    be (``origin``), whether it is an abstention statement, and the run that wrote it."""

    citations: list[Citation] = Field(default_factory=list)
    origin: str = "split"
    is_abstention: bool = False
    run_id: str | None = None

    @field_serializer("citations")
    def _citations(self, citations: list[Citation]) -> list[dict[str, Any]]:
        return [c.model_dump(exclude_none=True) for c in citations]  # as the store keeps them

    def verdict(self) -> Verdict:
        """The plain :class:`Verdict` (what :class:`~judge.api.AnswerResult` carries)."""
        return Verdict.model_validate(self.model_dump(include=set(Verdict.model_fields)))


class AnswerView(BaseModel):
    """An answer as stored, with its verdicts (by one judge version, or by every version that
    judged it, in version and claim order)."""

    answer_id: str
    question: str | None = None
    answer: str
    generator: str | None = None
    #: the status the record said to expect (``answered`` / ``partial`` / ``insufficient``)
    expected_status: str | None = None
    #: the statuses runs gave the answer
    statuses: list[str] = Field(default_factory=list)
    #: why the judge refused to grade it (self-grading, no generator), if it did
    refused: str | None = None
    verdicts: list[ClaimVerdict] = Field(default_factory=list)
    #: sentences the split found no claim in, with the reason
    skipped: list[dict[str, Any]] = Field(default_factory=list)


_VERDICT_KEYS = set(ClaimVerdict.model_fields)


def answer_view(
    store: Store, answer_id: str, judge_version: str | None = None,
    claim_id: str | None = None,
) -> AnswerView | None:
    """The answer ``answer_id`` with its verdicts by ``judge_version`` (None: every version),
    only the verdicts of ``claim_id`` when given; None when the store has no such answer."""
    row = store.answer(answer_id)
    if row is None:
        return None
    verdicts = [
        ClaimVerdict.model_validate({k: v for k, v in r.items() if k in _VERDICT_KEYS})
        for r in store.verdict_rows(answer_id=answer_id, judge_version=judge_version)
        if claim_id is None or r["claim_id"] == claim_id
    ]
    return AnswerView(
        answer_id=answer_id, question=row["question"], answer=row["answer"],
        generator=row["generator"], expected_status=row["expected_status"],
        statuses=sorted(store.answer_statuses(answer_id)),
        refused=store.refused_reason(answer_id), verdicts=verdicts,
        skipped=store.split_skips(answer_id, judge_version),
    )


def answer(
    answer_id: str, *, db: str | Path | Store, judge_version: str | None = None
) -> AnswerView:
    """The stored answer ``answer_id`` with a verdict per claim (by ``judge_version``, an exact
    id; None: every version that judged it), the statuses runs gave it, a refusal and the
    sentences the split skipped: what ``judge show`` prints and the service's
    ``/v1/answers/{id}/verdicts`` returns. Raises :class:`~judge.errors.NotFound` when the
    store has no such answer."""
    with opened(db) as store:
        view = answer_view(store, answer_id, judge_version)
    if view is None:
        raise NotFound(f"no answer {answer_id!r} in {db}")
    return view
