"""Direction of the judge's errors against human gold labels.

* **lenient rate**: of the claims humans did *not* label ``supported``, the share the judge
  labelled ``supported``: missed hallucinations, the costly direction.
* **strict rate**: of the claims humans labelled ``supported``, the share the judge labelled
  anything else: wasted review time.

``judge_error`` is never dropped. It is counted (``judge_errors``) and, for both rates, treated
as *not supported*: a judge error goes to the review queue (fail closed), so it cannot be a
missed hallucination but it does cost review time. On a gold-``supported`` claim it therefore
raises the strict rate; on a gold non-supported claim it is not lenient.

Without weights every rate is a plain proportion with a Wilson interval. With weights the
value is the weighted share and the Wilson interval uses Kish's effective sample size
``(sum w)**2 / sum(w**2)``; ``n`` stays the unweighted item count. For a stratified review
sample prefer :mod:`calibration.weighting`, which uses the sampling design (with finite
population correction) instead of the weights alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from calibration.labels import (
    JUDGE_ERROR,
    JUDGE_LABELS,
    LABELS,
    SUPPORTED,
    UNSPECIFIED,
    check_labels,
    check_same_length,
)
from calibration.results import Estimate, ResultModel, nan_estimate
from calibration.stats import wilson_bounds, wilson_interval


class ErrorDirection(ResultModel):
    """Lenient and strict rates overall, per gold label and per gold subtype.

    ``lenient_by_label`` covers the three non-supported gold labels; ``lenient_by_subtype`` and
    ``strict_by_subtype`` are keyed by gold subtype (``"(unspecified)"`` when missing) and only
    hold subtypes that occur; ``strict_by_subtype`` stays empty unless some gold-supported
    claim carries a subtype (e.g. ``partial_support``). ``judge_errors_by_gold_label`` says
    where the judge errors fell.
    """

    lenient: Estimate
    strict: Estimate
    lenient_by_label: dict[str, Estimate]
    lenient_by_subtype: dict[str, Estimate]
    strict_by_subtype: dict[str, Estimate]
    judge_errors: int
    judge_errors_by_gold_label: dict[str, int]


def _share(hits: Sequence[bool], weights: Sequence[float] | None, confidence: float) -> Estimate:
    """Share of true values, weighted (Kish effective n for the interval) or not."""
    n = len(hits)
    if weights is None:
        return wilson_interval(sum(hits), n, confidence)
    if n == 0:
        return nan_estimate(0)
    total = sum(weights)
    if total <= 0:
        return nan_estimate(n)
    value = sum(w for h, w in zip(hits, weights, strict=True) if h) / total
    n_eff = total * total / sum(w * w for w in weights)
    low, high = wilson_bounds(value, n_eff, confidence)
    return Estimate(value=value, ci_low=low, ci_high=high, n=n)


def _rate(
    gold: Sequence[str],
    judged: Sequence[str],
    weights: Sequence[float] | None,
    confidence: float,
    *,
    lenient: bool,
    keep: Sequence[bool] | None = None,
) -> Estimate:
    hits: list[bool] = []
    kept_weights: list[float] | None = None if weights is None else []
    for i, (g, j) in enumerate(zip(gold, judged, strict=True)):
        if keep is not None and not keep[i]:
            continue
        if lenient and g != SUPPORTED:
            hits.append(j == SUPPORTED)
        elif not lenient and g == SUPPORTED:
            hits.append(j != SUPPORTED)
        else:
            continue
        if kept_weights is not None and weights is not None:
            kept_weights.append(weights[i])
    return _share(hits, kept_weights, confidence)


def _validate(
    gold: Sequence[str],
    judged: Sequence[str],
    gold_subtypes: Sequence[str | None] | None,
    weights: Sequence[float] | None,
) -> None:
    check_same_length(gold=gold, judged=judged, gold_subtypes=gold_subtypes, weights=weights)
    check_labels(gold, LABELS, "gold")
    check_labels(judged, JUDGE_LABELS, "judged")
    if weights is not None and any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")


def lenient_rate(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    confidence: float = 0.95,
) -> Estimate:
    """Share of gold non-supported claims the judge labelled ``supported``."""
    _validate(gold, judged, None, weights)
    return _rate(gold, judged, weights, confidence, lenient=True)


def strict_rate(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    confidence: float = 0.95,
) -> Estimate:
    """Share of gold-supported claims the judge labelled anything but ``supported``
    (``judge_error`` included)."""
    _validate(gold, judged, None, weights)
    return _rate(gold, judged, weights, confidence, lenient=False)


def error_direction(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    gold_subtypes: Sequence[str | None] | None = None,
    weights: Sequence[float] | None = None,
    confidence: float = 0.95,
) -> ErrorDirection:
    """Lenient and strict rates overall, per gold label and per gold subtype.

    ``gold``, ``judged``, ``gold_subtypes`` and ``weights`` are parallel sequences, one entry
    per claim; ``judged`` may hold ``"judge_error"``.
    """
    _validate(gold, judged, gold_subtypes, weights)
    subtypes = [s or UNSPECIFIED for s in gold_subtypes] if gold_subtypes is not None else None

    def rate(lenient: bool, keep: Sequence[bool] | None = None) -> Estimate:
        return _rate(gold, judged, weights, confidence, lenient=lenient, keep=keep)

    by_label = {
        label: rate(True, [g == label for g in gold]) for label in LABELS if label != SUPPORTED
    }
    lenient_by_subtype: dict[str, Estimate] = {}
    strict_by_subtype: dict[str, Estimate] = {}
    if subtypes is not None:
        supported_subtyped = any(
            g == SUPPORTED and s != UNSPECIFIED for g, s in zip(gold, subtypes, strict=True)
        )
        for subtype in dict.fromkeys(subtypes):
            keep = [s == subtype for s in subtypes]
            if any(k and g != SUPPORTED for k, g in zip(keep, gold, strict=True)):
                lenient_by_subtype[subtype] = rate(True, keep)
            if supported_subtyped and any(
                k and g == SUPPORTED for k, g in zip(keep, gold, strict=True)
            ):
                strict_by_subtype[subtype] = rate(False, keep)
    errors_by_label = {label: 0 for label in LABELS}
    for g, j in zip(gold, judged, strict=True):
        if j == JUDGE_ERROR:
            errors_by_label[g] += 1
    return ErrorDirection(
        lenient=rate(True),
        strict=rate(False),
        lenient_by_label=by_label,
        lenient_by_subtype=dict(sorted(lenient_by_subtype.items())),
        strict_by_subtype=dict(sorted(strict_by_subtype.items())),
        judge_errors=sum(errors_by_label.values()),
        judge_errors_by_gold_label=errors_by_label,
    )
