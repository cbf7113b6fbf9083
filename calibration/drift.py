"""Drift between two judge versions run on the same claims: a new prompt or model is adopted
only with this report in hand.

The report holds the flip table (label under A → label under B → count), agreement and
Cohen's kappa between the versions, three paired significance tests, the change of each
label's rate with an interval, every flipped claim with both labels and rationales, and,
where gold labels are given, each version against gold side by side.

Tests: McNemar on *supported versus not supported* (``judge_error`` is "not supported"),
exact below 25 discordant claims; Stuart–Maxwell for marginal homogeneity of the full table
(does the label distribution shift?) and Bowker for its symmetry (are flips one-directional?).
Rate changes are ``rate_B - rate_A`` with Newcombe's paired interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, field_validator

from calibration.formatting import defined, pct
from calibration.labels import JUDGE_LABELS, LABELS, SUPPORTED
from calibration.results import Estimate, ResultModel, SignificanceResult
from calibration.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bowker,
    cohen_kappa,
    confusion_matrix,
    mcnemar,
    paired_difference,
    stuart_maxwell,
    wilson_interval,
)


class DriftPair(BaseModel):
    """One claim judged by version A and version B (labels may be ``judge_error``);
    ``gold_label`` when a human label exists."""

    claim_id: str
    label_a: str
    label_b: str
    rationale_a: str | None = None
    rationale_b: str | None = None
    gold_label: str | None = None

    @field_validator("label_a", "label_b")
    @classmethod
    def _judge_label(cls, value: str) -> str:
        if value not in JUDGE_LABELS:
            raise ValueError(f"{value!r} is not one of {JUDGE_LABELS}")
        return value

    @field_validator("gold_label")
    @classmethod
    def _gold_label(cls, value: str | None) -> str | None:
        if value is not None and value not in LABELS:
            raise ValueError(f"gold_label {value!r} is not one of {LABELS}")
        return value


class Flip(ResultModel):
    """A claim whose label changed. ``toward_gold``: ``"toward"`` if B matches gold and A did
    not, ``"away"`` if A matched gold and B does not, ``"neither"`` if neither matches,
    ``None`` without gold."""

    claim_id: str
    label_a: str
    label_b: str
    rationale_a: str | None = None
    rationale_b: str | None = None
    gold_label: str | None = None
    toward_gold: Literal["toward", "away", "neither"] | None = None


class RateChange(ResultModel):
    """A rate under A and under B on the same claims, and ``change = B - A`` (Newcombe)."""

    rate_a: Estimate
    rate_b: Estimate
    change: Estimate


class DriftGold(ResultModel):
    """Both versions against gold on the ``n`` claims that have a gold label.

    ``lenient`` is over gold non-supported claims, ``strict`` over gold-supported claims
    (``judge_error`` counts as not supported, as in :mod:`calibration.direction`).
    """

    n: int
    accuracy: RateChange
    lenient: RateChange
    strict: RateChange
    toward_gold: int
    away_from_gold: int
    neither: int


class DriftReport(ResultModel):
    """Drift of judge version B against version A on the same ``n`` claims."""

    version_a: str
    version_b: str
    n: int
    flips: dict[str, dict[str, int]]
    n_flipped: int
    agreement: Estimate
    kappa: Estimate
    mcnemar: SignificanceResult
    stuart_maxwell: SignificanceResult
    bowker: SignificanceResult
    per_label: dict[str, RateChange]
    flipped: list[Flip]
    gold: DriftGold | None
    confidence: float
    bootstrap_seed: int
    bootstrap_resamples: int


def _paired(a: Sequence[bool], b: Sequence[bool], confidence: float) -> RateChange:
    both = sum(x and y for x, y in zip(a, b, strict=True))
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    n = len(a)
    return RateChange(
        rate_a=wilson_interval(both + only_a, n, confidence),
        rate_b=wilson_interval(both + only_b, n, confidence),
        change=paired_difference(both, only_a, only_b, n - both - only_a - only_b, confidence),
    )


def _direction(pair: DriftPair) -> Literal["toward", "away", "neither"] | None:
    if pair.gold_label is None:
        return None
    if pair.label_b == pair.gold_label:
        return "toward"
    if pair.label_a == pair.gold_label:
        return "away"
    return "neither"


def build_drift_report(
    pairs: Sequence[DriftPair],
    *,
    version_a: str,
    version_b: str,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> DriftReport:
    """Compare judge version B with version A on the same claims (claim ids unique)."""
    seen: set[str] = set()
    for pair in pairs:
        if pair.claim_id in seen:
            raise ValueError(f"claim {pair.claim_id!r} appears twice")
        seen.add(pair.claim_id)
    a = [p.label_a for p in pairs]
    b = [p.label_b for p in pairs]
    table = confusion_matrix(a, b, gold_labels=JUDGE_LABELS, judge_labels=JUDGE_LABELS)
    flipped = [
        Flip(claim_id=p.claim_id, label_a=p.label_a, label_b=p.label_b,
             rationale_a=p.rationale_a, rationale_b=p.rationale_b, gold_label=p.gold_label,
             toward_gold=_direction(p))
        for p in pairs if p.label_a != p.label_b
    ]
    supported_a = [x == SUPPORTED for x in a]
    supported_b = [x == SUPPORTED for x in b]
    per_label = {
        label: _paired([x == label for x in a], [x == label for x in b], confidence)
        for label in JUDGE_LABELS
    }
    return DriftReport(
        version_a=version_a,
        version_b=version_b,
        n=len(pairs),
        flips={la: {lb: int(table[i, j]) for j, lb in enumerate(JUDGE_LABELS)}
               for i, la in enumerate(JUDGE_LABELS)},
        n_flipped=len(flipped),
        agreement=wilson_interval(len(pairs) - len(flipped), len(pairs), confidence),
        kappa=cohen_kappa(a, b, n_resamples=n_resamples, seed=seed, confidence=confidence),
        mcnemar=mcnemar(
            sum(x and not y for x, y in zip(supported_a, supported_b, strict=True)),
            sum(y and not x for x, y in zip(supported_a, supported_b, strict=True)),
        ),
        stuart_maxwell=stuart_maxwell(table),
        bowker=bowker(table),
        per_label=per_label,
        flipped=flipped,
        gold=_gold(pairs, flipped, confidence),
        confidence=confidence,
        bootstrap_seed=seed,
        bootstrap_resamples=n_resamples,
    )


def _gold(pairs: Sequence[DriftPair], flipped: list[Flip], confidence: float) -> DriftGold | None:
    with_gold = [p for p in pairs if p.gold_label is not None]
    if not with_gold:
        return None
    not_supported = [p for p in with_gold if p.gold_label != SUPPORTED]
    supported = [p for p in with_gold if p.gold_label == SUPPORTED]
    directions = [f.toward_gold for f in flipped]
    return DriftGold(
        n=len(with_gold),
        accuracy=_paired([p.label_a == p.gold_label for p in with_gold],
                         [p.label_b == p.gold_label for p in with_gold], confidence),
        lenient=_paired([p.label_a == SUPPORTED for p in not_supported],
                        [p.label_b == SUPPORTED for p in not_supported], confidence),
        strict=_paired([p.label_a != SUPPORTED for p in supported],
                       [p.label_b != SUPPORTED for p in supported], confidence),
        toward_gold=directions.count("toward"),
        away_from_gold=directions.count("away"),
        neither=directions.count("neither"),
    )


def _points(x: float, digits: int = 1) -> str:
    """A difference of two shares in percentage points, signed, with a true minus sign."""
    text = f"{100 * x:+.{digits}f}"
    return text.replace("-", "\u2212")


def drift_verdict(report: DriftReport) -> str:
    """One sentence that answers "which version agrees more with people": with gold, the
    direction of B's accuracy change against A (more or less when its interval excludes 0,
    else "about as much"), both accuracies, the change with its interval, and the flips
    toward and away from gold; without gold, that the report cannot say, and how much the
    versions agree with each other."""
    g = report.gold
    if g is None or not g.n:
        return (f"Without gold labels this report cannot say which version agrees more with "
                f"people: {report.n_flipped} of {report.n} claims changed label (agreement "
                f"{pct(report.agreement.value, 1)}); pass --gold to find out.")
    change = g.accuracy.change
    low, high = change.ci_low, change.ci_high
    if defined(low) and low > 0:
        how = "more than A"
    elif defined(high) and high < 0:
        how = "less than A"
    else:
        how = "about as much as A (the interval of the difference includes 0)"
    interval = (f" [{_points(low)}, {_points(high)}]" if defined(low) and defined(high)
                else "")
    return (f"B agrees with people {how}: accuracy {pct(g.accuracy.rate_a.value, 1)} \u2192 "
            f"{pct(g.accuracy.rate_b.value, 1)}, {_points(change.value)}{interval} points on "
            f"{g.n} gold claims; {g.toward_gold} flips toward gold, {g.away_from_gold} away.")
