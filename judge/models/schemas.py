"""Structured outputs asked of the judge model (schema version ``judge.config.SCHEMA_VERSION``).

Deliberately without any confidence field: the model is a witness, not the judge of
itself. Strength of evidence is computed by the program.

No ``maxLength``/``maxItems`` here: llama.cpp compiles JSON schemas into a sampling
grammar, and length bounds expand into huge grammars that slow decoding by an order of
magnitude. Bounds are enforced by the pipeline after parsing instead.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

LabelLiteral = Literal["supported", "contradicted", "not_in_source", "not_verifiable"]
SubtypeLiteral = Literal[
    "unsupported_addition",
    "misattribution",
    "numeric_or_version_error",
    "self_contradiction",
    "overgeneralization",
    "dropped_condition",
    "opinion",
]


class SplitClaim(BaseModel):
    sentence: int = Field(description="number of the answer sentence this claim comes from")
    text: str = Field(min_length=1, description="one self-contained claim")
    kind: Literal["fact", "abstention"] = Field(
        description="'abstention' if the claim says the sources do not cover something"
    )


class SplitOutput(BaseModel):
    claims: list[SplitClaim]


#: Why a sentence holds no claim (``split_claims`` v2 and later).
SkipReason = Literal["greeting", "question", "advice", "filler"]


class SkippedSentence(BaseModel):
    sentence: int = Field(description="number of the answer sentence that holds no claim")
    reason: SkipReason


class SplitOutputV2(BaseModel):
    """``split_claims`` v2: every sentence is accounted for, by claims or by a reason. A
    sentence left out of both is judged as it stands (the program checks coverage)."""

    claims: list[SplitClaim]
    skipped: list[SkippedSentence] = Field(default_factory=list)


class EvidenceQuote(BaseModel):
    source_id: str
    quote: str = Field(description="verbatim span copied from that source")


class ClaimJudgement(BaseModel):
    claim: int = Field(description="claim number as given")
    label: LabelLiteral
    subtype: SubtypeLiteral | None = Field(
        default=None, description="required unless the label is 'supported'"
    )
    evidence: list[EvidenceQuote] = Field(default_factory=list)
    rationale: str = ""

    @model_validator(mode="after")
    def _subtype_rule(self) -> ClaimJudgement:
        if self.label != "supported" and self.subtype is None:
            raise ValueError(f"claim {self.claim}: subtype is required when label is {self.label}")
        if self.label == "supported":
            self.subtype = None
        return self


class VerifyOutput(BaseModel):
    judgements: list[ClaimJudgement]


class ClaimLabel(BaseModel):
    """One label for one claim (the ``per_claim`` strategy: evidence is located by the
    program, the subtype derived by the program)."""

    label: LabelLiteral
