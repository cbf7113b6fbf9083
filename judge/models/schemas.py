"""Structured outputs asked of the judge model (schema version ``judge.config.SCHEMA_VERSION``).

Deliberately without any confidence field: the model is a witness, not the judge of
itself. Strength of evidence is computed by the program.

No ``maxLength``/``maxItems`` here: llama.cpp compiles JSON schemas into a sampling
grammar, and length bounds expand into huge grammars that slow decoding by an order of
magnitude. Bounds are enforced by the pipeline after parsing instead.
"""

from __future__ import annotations

import marshal
from functools import cache
from typing import Any, ClassVar, Literal

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


class Output(BaseModel):
    """A structured output. Its JSON schema (sent with every call, by the client for the
    call's identity and by instructor as ``response_format``) is built once per class."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if args or kwargs:
            return super().model_json_schema(*args, **kwargs)
        # a fresh copy (callers may change theirs), from the schema's marshalled bytes: a
        # JSON schema is dicts, lists and scalars only, and this copy costs a seventh of a
        # deepcopy (instructor asks for it on every structured call)
        return marshal.loads(_schema_bytes(cls))  # type: ignore[no-any-return]

    #: leave titles and descriptions out of the schema (tokens a provider charges for; the
    #: prompt explains the fields)
    bare: ClassVar[bool] = False


@cache
def _schema(model: type[Output]) -> dict[str, Any]:
    schema: dict[str, Any] = BaseModel.model_json_schema.__func__(model)  # type: ignore[attr-defined]
    return _bare(schema) if model.bare else schema


@cache
def _schema_bytes(model: type[Output]) -> bytes:
    return marshal.dumps(_schema(model))


def _bare(schema: Any) -> Any:
    """The schema without ``title`` and ``description`` keywords (properties of those names
    are kept)."""
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("title", "description") and isinstance(value, str):
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _bare(sub) for name, sub in value.items()}
        else:
            out[key] = _bare(value)
    return out


class SplitClaim(Output):
    sentence: int = Field(description="number of the answer sentence this claim comes from")
    text: str = Field(min_length=1, description="one self-contained claim")
    kind: Literal["fact", "abstention"] = Field(
        description="'abstention' if the claim says the sources do not cover something"
    )


class SplitOutput(Output):
    claims: list[SplitClaim]


#: Why a sentence holds no claim (``split_claims`` v2 and later).
SkipReason = Literal["greeting", "question", "advice", "filler"]


class SkippedSentence(Output):
    sentence: int = Field(description="number of the answer sentence that holds no claim")
    reason: SkipReason


class SplitOutputV2(Output):
    """``split_claims`` v2: every sentence is accounted for, by claims or by a reason. A
    sentence left out of both is judged as it stands (the program checks coverage)."""

    claims: list[SplitClaim]
    skipped: list[SkippedSentence] = Field(default_factory=list)


class EvidenceQuote(Output):
    source_id: str
    quote: str = Field(description="verbatim span copied from that source")


class ClaimJudgement(Output):
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


class VerifyOutput(Output):
    judgements: list[ClaimJudgement]


class ClaimLabel(Output):
    """One label for one claim (the ``per_claim`` strategy: evidence is located by the
    program, the subtype derived by the program)."""

    label: LabelLiteral


# -- verify_claims v2: compact output -------------------------------------------------------


class SourceQuote(Output):
    """A few words copied from a source; the program finds them and extends them to the
    sentence (:func:`judge.decide.batch.extend_quote`), or the quote check fails."""

    bare: ClassVar[bool] = True
    source: str
    quote: str


class CompactJudgement(Output):
    bare: ClassVar[bool] = True
    claim: int
    label: LabelLiteral
    subtype: SubtypeLiteral | None = None
    evidence: list[SourceQuote] = Field(default_factory=list)
    rationale: str = ""

    @model_validator(mode="after")
    def _subtype_rule(self) -> CompactJudgement:
        self.subtype = compact_subtype(self.label, self.subtype, f"claim {self.claim}")
        return self


def compact_subtype(label: str, subtype: Any, who: str) -> Any:
    """The subtype a compact judgement keeps: required unless the label is ``supported``,
    dropped when it is (raises for a missing one, naming ``who``)."""
    if label != "supported" and subtype is None:
        raise ValueError(f"{who}: subtype is required when label is {label}")
    return None if label == "supported" else subtype


class CompactVerifyOutput(Output):
    """What verify_claims v2 asks: one compact judgement per claim, no titles and no
    descriptions in the schema (the prompt explains the fields)."""

    bare: ClassVar[bool] = True
    judgements: list[CompactJudgement]


# -- judge_answer v1: split and judge in one call ---------------------------------------------


class JointClaim(Output):
    """One claim of a free-text answer with its judgement (``judge_answer``). ``text`` is
    left out (empty) when the whole sentence is the claim as written: the program takes the
    sentence. ``kind`` is left out for facts."""

    bare: ClassVar[bool] = True
    sentence: int
    text: str = ""
    kind: Literal["fact", "abstention"] = "fact"
    label: LabelLiteral
    subtype: SubtypeLiteral | None = None
    evidence: list[SourceQuote] = Field(default_factory=list)
    rationale: str = ""

    @model_validator(mode="after")
    def _subtype_rule(self) -> JointClaim:
        self.subtype = compact_subtype(self.label, self.subtype,
                                       f"the claim of sentence {self.sentence}")
        return self


class JointOutput(Output):
    """What judge_answer v1 asks: the answer's claims, each judged, and the sentences that
    hold none (the program checks that every sentence is accounted for)."""

    bare: ClassVar[bool] = True
    claims: list[JointClaim]
    skipped: list[SkippedSentence] = Field(default_factory=list)
