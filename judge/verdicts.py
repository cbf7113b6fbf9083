"""Output vocabulary: labels, subtypes, claims, evidence, checks and verdicts.

These are the typed results of judging. Nothing here carries a model-reported
confidence: evidence ``strength`` is computed by the program (see :mod:`judge.checks.strength`).
May import :mod:`judge.records` only.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from judge.records import Citation


class Label(StrEnum):
    """The four claim labels (design principle 2)."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NOT_IN_SOURCE = "not_in_source"
    NOT_VERIFIABLE = "not_verifiable"


#: Stored in place of a label when the judge could not produce one (fail closed).
JUDGE_ERROR = "judge_error"

LABELS: tuple[str, ...] = tuple(label.value for label in Label)


class Subtype(StrEnum):
    """Hallucination subtypes the judge assigns to non-supported claims, plus ``opinion``
    for value judgements (``not_verifiable``)."""

    UNSUPPORTED_ADDITION = "unsupported_addition"
    MISATTRIBUTION = "misattribution"
    NUMERIC_OR_VERSION_ERROR = "numeric_or_version_error"
    SELF_CONTRADICTION = "self_contradiction"
    OVERGENERALIZATION = "overgeneralization"
    DROPPED_CONDITION = "dropped_condition"
    OPINION = "opinion"


#: Subtypes found in human gold sets (external datasets) that the judge itself never assigns.
GOLD_ONLY_SUBTYPES: tuple[str, ...] = ("partial_support", "not_a_claim", "generic", "personal")
ALL_SUBTYPES: tuple[str, ...] = tuple(s.value for s in Subtype) + GOLD_ONLY_SUBTYPES

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
    origin: Literal["given", "split", "unsplit"] = "split"
    is_abstention: bool = False


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
    #: (``scores``); None for the structured strategies, judge errors and labels the program
    #: decided. The review queue reads claims with the lowest first.
    support: float | None = None
    review: bool = True
    review_reasons: list[str] = Field(default_factory=list)
    error: str | None = None
    call_ids: list[str] = Field(default_factory=list)
    #: which decision rule of the judge config decided it (``scores``): ``"default"``, or the
    #: name of the domain whose rule was used (``domain_rules``); None for the other
    #: strategies and for verdicts stored before rules were recorded
    rule: str | None = None

    @property
    def is_error(self) -> bool:
        return self.label == JUDGE_ERROR


AnswerStatus = Literal["answered", "partial", "insufficient"]
