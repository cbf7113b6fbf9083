"""Output vocabulary: labels, subtypes, claims, evidence, checks and verdicts.

These are the typed results of judging. Nothing here carries a model-reported
confidence: evidence ``strength`` is computed by the program (see :mod:`judge.checks.strength`).
May import :mod:`judge.labels` and :mod:`judge.records` only.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from judge.labels import ALL_SUBTYPES as ALL_SUBTYPES
from judge.labels import GOLD_ONLY_SUBTYPES as GOLD_ONLY_SUBTYPES
from judge.labels import JUDGE_ERROR as JUDGE_ERROR
from judge.labels import LABELS as LABELS
from judge.labels import Label as Label
from judge.labels import Subtype as Subtype
from judge.records import Citation

CheckOutcome = Literal["pass", "fail", "skip"]


class Check(BaseModel):
    """One deterministic check and its outcome. ``target`` names what was checked
    (e.g. ``citation[0]``, ``evidence[1]``, ``claim``)."""

    name: str
    target: str = "claim"
    outcome: CheckOutcome
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.outcome == "fail"


class Evidence(BaseModel):
    """A piece of evidence the judge pointed to, checked by the program."""

    source_id: str
    quote: str | None = None
    path: str | None = None
    found: bool | None = None
    start: int | None = None
    end: int | None = None


class Claim(BaseModel):
    """One independently checkable statement of an answer."""

    id: str
    answer_id: str
    index: int
    text: str
    citations: list[Citation] = Field(default_factory=list)
    #: ``uncovered``: a sentence the split neither claimed nor skipped for an accepted reason,
    #: judged as it stands (flagged for review)
    origin: Literal["given", "split", "unsplit", "uncovered", "sentence"] = "split"
    is_abstention: bool = False


_TRACEBACK = re.compile(r"Traceback \(most recent call last\):.*?(?=\n\S|\Z)", re.S)
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+.*$\n?(?:^ {4,}\S.*$\n?)?', re.M)


def without_traceback(text: str) -> str:
    """``text`` without Python tracebacks and stack frames (``File "…", line N`` and the
    source line under it); a message that was nothing else says so."""
    cleaned = _FRAME.sub("", _TRACEBACK.sub("", text))
    cleaned = re.sub(r"\n{2,}", "\n", cleaned).strip()
    return cleaned or "the call failed (its traceback is not kept in the verdict)"


class Verdict(BaseModel):
    """The judgement of one claim by one judge version."""

    claim_id: str
    answer_id: str
    judge_version: str
    #: the claim's text
    claim: str = ""
    label: str  # a Label value or JUDGE_ERROR
    subtype: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    rationale: str | None = None
    checks: list[Check] = Field(default_factory=list)
    strength: float = 0.0
    #: the judge's probability that the claim is supported, when its strategy gives one
    #: (``scores``, ``probe``; ``batch`` with ``label_logprobs``, read from the label's
    #: tokens); None otherwise, for judge errors and labels the program decided. The review
    #: queue reads claims with the lowest first.
    support: float | None = None
    review: bool = True
    review_reasons: list[str] = Field(default_factory=list)
    error: str | None = None

    @field_validator("error")
    @classmethod
    def _no_traceback(cls, error: str | None) -> str | None:
        """A verdict says why it failed, never with a Python traceback (the call row keeps
        the provider's whole error)."""
        return None if error is None else without_traceback(error)
    call_ids: list[str] = Field(default_factory=list)
    #: which decision rule of the judge config decided it (``scores``): ``"default"``, or the
    #: name of the domain whose rule was used (``domain_rules``); None for the other
    #: strategies and for verdicts stored before rules were recorded
    rule: str | None = None

    @property
    def is_error(self) -> bool:
        return self.label == JUDGE_ERROR


AnswerStatus = Literal["answered", "partial", "insufficient"]
