"""The ``score_model`` of strategy ``scores``: weights per label and feature, an intercept per
label, and the names of the features a rule may weigh; and a per-domain rule
(:class:`DomainRule`: a score model with its own review threshold). The features themselves
are computed by :mod:`judge.decide.linear`; this module holds only what a judge config pins."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.config.probe import ProbeHeadRef
from judge.verdicts import LABELS

#: The features the embedded default's rule weighs.
CORE_FEATURES: tuple[str, ...] = (
    *(f"lp_{label}" for label in LABELS),  # log-probabilities, normalised over the options
    "overlap",  # share of the claim's words in the best evidence excerpt
    "opinion",  # 1 when the claim reads like an opinion or small talk
    "numbers_missing",  # 1 when evidence covering the claim lacks its numbers
    "low_overlap",  # 1 when overlap is below support_overlap_min
    "claim_length",  # log(1 + characters)
)
#: What the text says about the claim (adopted with the default d5cd53d81137).
TEXT_FEATURES: tuple[str, ...] = (
    "first_person",  # 1 when the claim speaks of its speaker (I, my, we, 我)
    "second_person",  # 1 when it addresses the reader (you, your, 你, 您)
    "question",  # 1 when it asks rather than states
    "best_sentence",  # BM25 coverage of the claim by the best single source sentence
)
#: Every known feature, in a fixed order (a fit writes weights for a subset of these).
FEATURES: tuple[str, ...] = CORE_FEATURES + TEXT_FEATURES


class ScoreModel(BaseModel):
    """Weights per label and feature, and an intercept per label."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, dict[str, float]]
    intercept: dict[str, float]

    @field_validator("weights", "intercept")
    @classmethod
    def _every_label(cls, value: dict) -> dict:  # type: ignore[type-arg]
        if set(value) != set(LABELS):
            raise ValueError(f"needs exactly the labels {list(LABELS)}, got {sorted(value)}")
        return {label: value[label] for label in LABELS}

    @field_validator("weights")
    @classmethod
    def _known_features(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for label, row in value.items():
            unknown = sorted(set(row) - set(FEATURES))
            if unknown:
                raise ValueError(f"weights[{label!r}] names unknown features {unknown}; "
                                 f"known: {list(FEATURES)}")
            if any(not math.isfinite(v) for v in row.values()):
                raise ValueError(f"weights[{label!r}] must be finite numbers")
        return {label: {f: row[f] for f in FEATURES if f in row} for label, row in value.items()}

    @field_validator("intercept")
    @classmethod
    def _finite_intercepts(cls, value: dict[str, float]) -> dict[str, float]:
        if any(not math.isfinite(v) for v in value.values()):
            raise ValueError("intercepts must be finite numbers")
        return value


#: The name a verdict records when the config's own (top-level) rule decided it.
DEFAULT_RULE = "default"


class DomainRule(BaseModel):
    """The decision rule of one domain (``[judge.domain_rules.<domain>]``): used instead of
    the config's ``score_model`` and ``review_support_below`` for answers of that domain
    (``AnswerRecord.domain``, or a gold item's ``dataset`` in ``judge eval-gold``)."""

    model_config = ConfigDict(extra="forbid")

    #: strategy ``scores``: the domain's linear rule
    score_model: ScoreModel | None = None
    #: strategy ``probe``: the domain's head (``judge fit`` shrinks it toward the default head)
    probe_head: ProbeHeadRef | None = None
    review_support_below: float = Field(default=0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one_rule(self) -> DomainRule:
        if (self.score_model is None) == (self.probe_head is None):
            raise ValueError("a domain rule has either a score_model (strategy 'scores') or a "
                             "probe_head (strategy 'probe')")
        return self
