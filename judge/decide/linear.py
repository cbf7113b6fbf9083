"""The linear decision rule of strategy ``scores`` (``score_model``) and the features it weighs.

The multiple-choice question gives four log-probabilities; the program knows more about a
claim than the model reports: how much of it the located evidence covers, whether its
numbers are missing from evidence that covers it, whether it reads like an opinion. A
``score_model`` (:mod:`judge.config.score_model`) weighs all of these at once:
``score(label) = intercept + sum(weight x feature)``, and the best score wins (an exact tie
never goes to ``supported``). The weights are fitted by class-balanced multinomial logistic
regression with the L2 strength chosen by grouped cross-validation, are part of the judge
version, and every feature is computed here for both the fit and the pipeline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from judge.checks.claims import evidence_numbers_check
from judge.checks.overlap import OPINION, evidence_overlap
from judge.config.score_model import ScoreModel
from judge.decide.excerpts import best_sentences
from judge.decide.options import OPTIONS, TIE_ORDER, log_normalise, softmax
from judge.records import AnswerRecord
from judge.split.citations import strip_markers
from judge.verdicts import LABELS, Evidence

FIRST_PERSON = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b|我", re.IGNORECASE
)
SECOND_PERSON = re.compile(r"\b(you|you're|you've|your|yours|yourself)\b|你|您", re.IGNORECASE)
QUESTION = re.compile(r"[?？]")


def features(
    claim_text: str,
    logprobs: Mapping[str, float],
    evidence: list[Evidence],
    record: AnswerRecord,
    support_overlap_min: float,
    numbers_overlap_min: float,
) -> dict[str, float]:
    """The features of one claim (:data:`judge.config.score_model.FEATURES`)."""
    overlap = evidence_overlap(claim_text, evidence, record)
    numbers_missing = overlap >= numbers_overlap_min and evidence_numbers_check(
        claim_text, evidence, record
    ).failed
    lp = log_normalise(logprobs)
    claim = strip_markers(claim_text, record.sources)
    best = best_sentences(claim, record, 1)
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
