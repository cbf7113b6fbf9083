"""A linear decision rule over the ``scores`` strategy's evidence (``score_model``).

The multiple-choice question gives four log-probabilities; the program knows more about a
claim than the model reports: how much of it the located evidence covers, whether its
numbers are missing from evidence that covers it, whether it reads like an opinion. Instead of
a bias per label plus hand-ordered override rules (``label_bias`` + ``signals``), a
``score_model`` weighs all of these at once: ``score(label) = intercept + sum(weight x
feature)``, and the best score wins (an exact tie never goes to ``supported``). The weights
are fitted on the tuning split only (``gold/fit_linear.py``: class-balanced multinomial
logistic regression, L2 strength chosen by grouped cross-validation), are part of the judge
version, and every feature is computed by this module for both the fit and the pipeline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, field_validator

from judge.checks import evidence_numbers_check
from judge.citations import strip_markers
from judge.excerpts import best_sentences
from judge.records import AnswerRecord
from judge.scores import OPTIONS, TIE_ORDER, log_normalise, softmax
from judge.signals import OPINION, evidence_overlap
from judge.slots import OUTCOMES
from judge.verdicts import LABELS, Evidence

#: The features the embedded default's rule weighs.
CORE_FEATURES: tuple[str, ...] = (
    *(f"lp_{label}" for label in OPTIONS.values()),  # log-probabilities, normalised
    "overlap",  # share of the claim's words in the best evidence excerpt
    "opinion",  # 1 when the claim reads like an opinion or small talk
    "numbers_missing",  # 1 when evidence covering the claim lacks its numbers
    "low_overlap",  # 1 when overlap is below support_overlap_min
    "claim_length",  # log(1 + characters)
)
#: More of what the text says about the claim (measured, not adopted: README).
TEXT_FEATURES: tuple[str, ...] = (
    "first_person",  # 1 when the claim speaks of its speaker (I, my, we, 我)
    "second_person",  # 1 when it addresses the reader (you, your, 你, 您)
    "question",  # 1 when it asks rather than states
    "best_sentence",  # BM25 coverage of the claim by the best single source sentence
)
#: With prompt ``fill_slot``: what the model filled the claim's blanked detail with
#: (judge.slots); all 0 when the question was not asked or the claim has no detail to blank out.
SLOT_FEATURES: tuple[str, ...] = tuple(f"slot_{outcome}" for outcome in OUTCOMES)
#: The features every ``scores`` verdict has, in a fixed order.
BASE_FEATURES: tuple[str, ...] = CORE_FEATURES + TEXT_FEATURES + SLOT_FEATURES
FIRST_PERSON = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b|我", re.IGNORECASE
)
SECOND_PERSON = re.compile(r"\b(you|you're|you've|your|yours|yourself)\b|你|您", re.IGNORECASE)
QUESTION = re.compile(r"[?？]")

#: With ``sentence_questions``: per label, the highest normalised log-probability the same
#: question gets about any single located sentence (the excerpts' own answer when no
#: sentence shares a word with the claim).
SENTENCE_FEATURES: tuple[str, ...] = tuple(f"s_max_{label}" for label in OPTIONS.values())
#: Every known feature, in a fixed order (a fit writes weights for a subset of these).
FEATURES: tuple[str, ...] = BASE_FEATURES + SENTENCE_FEATURES


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

    def sentence_features(self) -> list[str]:
        """The per-sentence features this rule weighs (they need ``sentence_questions``)."""
        return self._used(SENTENCE_FEATURES)

    def slot_features(self) -> list[str]:
        """The fill-the-blank features this rule weighs (they need prompt ``fill_slot``)."""
        return self._used(SLOT_FEATURES)

    def _used(self, names: tuple[str, ...]) -> list[str]:
        used = {name for row in self.weights.values() for name in row}
        return [name for name in names if name in used]


def features(
    claim_text: str,
    logprobs: Mapping[str, float],
    evidence: list[Evidence],
    record: AnswerRecord,
    support_overlap_min: float,
    numbers_overlap_min: float,
    sentences: list[Mapping[str, float]] | None = None,
    slot: str | None = None,
) -> dict[str, float]:
    """The features of one claim (``BASE_FEATURES``; with ``sentences``, the answers to the
    per-sentence questions, also ``SENTENCE_FEATURES``; ``SLOT_FEATURES`` are one-hot of the
    fill-the-blank outcome, all 0 when ``slot`` is None)."""
    overlap = evidence_overlap(claim_text, evidence, record)
    numbers_missing = overlap >= numbers_overlap_min and evidence_numbers_check(
        claim_text, evidence, record
    ).failed
    lp = log_normalise(logprobs)
    claim = strip_markers(claim_text, record.sources)
    best = best_sentences(claim, record, 1)
    per_sentence = {}
    if sentences is not None:
        answers = [log_normalise(answer) for answer in sentences] or [lp]
        per_sentence = {f"s_max_{label}": max(a[label] for a in answers)
                        for label in OPTIONS.values()}
    return {
        **{f"lp_{label}": lp[label] for label in OPTIONS.values()},
        "overlap": overlap,
        "opinion": float(bool(OPINION.search(claim_text))),
        "numbers_missing": float(numbers_missing),
        "low_overlap": float(overlap < support_overlap_min),
        "claim_length": math.log1p(len(claim_text)),
        "first_person": float(bool(FIRST_PERSON.search(claim))),
        "second_person": float(bool(SECOND_PERSON.search(claim))),
        "question": float(bool(QUESTION.search(claim))),
        "best_sentence": best[0][0] if best else 0.0,
        **per_sentence,
        **{f"slot_{outcome}": float(slot == outcome) for outcome in OUTCOMES},
    }


def decide_linear(
    values: Mapping[str, float], model: ScoreModel
) -> tuple[str, dict[str, float]]:
    """(label, probabilities): the best linear score; an exact tie never goes to supported."""
    scores = {
        label: model.intercept[label]
        + sum(w * values[name] for name, w in model.weights[label].items())
        for label in LABELS
    }
    probs = softmax(scores)
    label = max(TIE_ORDER, key=lambda name: (probs[name], -TIE_ORDER.index(name)))
    return label, probs
