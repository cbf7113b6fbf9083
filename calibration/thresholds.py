"""Gates on a drift or calibration report: which thresholds does it violate?

Thresholds compare *point estimates* (the messages quote the interval too). A threshold that
cannot be evaluated (no gold labels for ``accuracy_drop``, an undefined kappa, ...) counts as
violated, with a message saying why: a gate fails closed. An unknown threshold name raises
``ValueError`` so that a typo cannot silently pass.

Drift report thresholds (B compared with A):
``kappa_below``, ``agreement_below``, ``flip_rate_above``, ``lenient_rate_increase``,
``strict_rate_increase``, ``accuracy_drop``, ``mcnemar_p_below``, ``stuart_maxwell_p_below``.

Calibration report thresholds:
``kappa_below``, ``accuracy_below``, ``balanced_accuracy_below``, ``lenient_rate_above``,
``strict_rate_above``, ``queue_recall_below``, ``judge_errors_above`` (a count).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from calibration.drift import DriftReport
from calibration.report import CalibrationReport
from calibration.results import Estimate, Num, ResultModel


class ThresholdViolation(ResultModel):
    """One violated threshold: its name, the limit, the observed value and a message."""

    name: str
    threshold: float
    observed: Num
    message: str


def _fmt(e: Estimate) -> str:
    ci = ""
    if math.isfinite(e.ci_low) and math.isfinite(e.ci_high):
        ci = f", CI {e.ci_low:.3f} to {e.ci_high:.3f}"
    return f"{e.value:.4g} (n={e.n}{ci})"


R = TypeVar("R", DriftReport, CalibrationReport)


class _Rule(Generic[R]):
    """How to read one threshold: the observed estimate (``None`` when not evaluable, with a
    reason), whether a value above or below the limit violates it, and what it measures."""

    def __init__(self, what: str, side: str, get: Callable[[R], Estimate | str]):
        self.what, self.side = what, side
        self.get: Callable[[R], Estimate | str] = get


def _negated(e: Estimate) -> Estimate:
    return Estimate(value=-e.value, ci_low=-e.ci_high, ci_high=-e.ci_low, n=e.n)


def _gold(field: str, negate: bool = False) -> Callable[[DriftReport], Estimate | str]:
    def get(r: DriftReport) -> Estimate | str:
        if r.gold is None:
            return "no gold labels in the drift pairs"
        change = getattr(r.gold, field).change
        return _negated(change) if negate else change
    return get


_DRIFT: dict[str, _Rule[DriftReport]] = {
    "kappa_below": _Rule("kappa between versions", "below", lambda r: r.kappa),
    "agreement_below": _Rule("agreement between versions", "below", lambda r: r.agreement),
    "flip_rate_above": _Rule("share of claims flipped", "above", lambda r: Estimate(
        value=1 - r.agreement.value, ci_low=1 - r.agreement.ci_high,
        ci_high=1 - r.agreement.ci_low, n=r.n)),
    "lenient_rate_increase": _Rule("lenient rate change (B - A)", "above", _gold("lenient")),
    "strict_rate_increase": _Rule("strict rate change (B - A)", "above", _gold("strict")),
    "accuracy_drop": _Rule("accuracy drop (A - B)", "above", _gold("accuracy", negate=True)),
    "mcnemar_p_below": _Rule("McNemar p (supported vs not)", "below",
                             lambda r: Estimate(value=r.mcnemar.p_value, n=r.n)),
    "stuart_maxwell_p_below": _Rule("Stuart-Maxwell p", "below",
                                    lambda r: Estimate(value=r.stuart_maxwell.p_value, n=r.n)),
}

_CALIBRATION: dict[str, _Rule[CalibrationReport]] = {
    "kappa_below": _Rule("judge-gold kappa", "below", lambda r: r.kappa),
    "accuracy_below": _Rule("accuracy", "below", lambda r: r.accuracy),
    "balanced_accuracy_below": _Rule("balanced accuracy", "below",
                                     lambda r: r.balanced_accuracy),
    "lenient_rate_above": _Rule("lenient rate", "above", lambda r: r.lenient_rate),
    "strict_rate_above": _Rule("strict rate", "above", lambda r: r.strict_rate),
    "queue_recall_below": _Rule("queue recall", "below", lambda r: r.queue_recall),
    "judge_errors_above": _Rule("judge errors", "above",
                                lambda r: Estimate(value=r.judge_errors, n=r.n)),
}


#: The threshold keys each kind of report understands.
THRESHOLD_KEYS: dict[str, tuple[str, ...]] = {
    "calibration": tuple(_CALIBRATION), "drift": tuple(_DRIFT),
}


def check_thresholds(
    report: DriftReport | CalibrationReport, fail_on: Mapping[str, float]
) -> list[ThresholdViolation]:
    """Return the thresholds in ``fail_on`` that ``report`` violates (empty list: all pass).

    Example: ``check_thresholds(drift, {"lenient_rate_increase": 0.05, "kappa_below": 0.6,
    "accuracy_drop": 0.05})``. ``*_increase`` compares the change B - A, ``accuracy_drop``
    the change A - B, ``*_above`` / ``*_below`` the value itself; equality is not a violation.
    """
    if isinstance(report, DriftReport):
        return _violations(_DRIFT, report, "drift", fail_on)
    if isinstance(report, CalibrationReport):
        return _violations(_CALIBRATION, report, "calibration", fail_on)
    raise TypeError(f"expected a DriftReport or CalibrationReport, got {type(report)!r}")


def _violations(
    rules: Mapping[str, _Rule[R]], report: R, kind: str, fail_on: Mapping[str, float]
) -> list[ThresholdViolation]:
    unknown = sorted(set(fail_on) - set(rules))
    if unknown:
        raise ValueError(
            f"unknown {kind} threshold(s) {unknown}; known: {', '.join(sorted(rules))}"
        )
    violations = []
    for name, limit in fail_on.items():
        rule = rules[name]
        observed = rule.get(report)
        if isinstance(observed, str) or math.isnan(observed.value):
            reason = observed if isinstance(observed, str) else "value undefined"
            violations.append(ThresholdViolation(
                name=name, threshold=limit, observed=math.nan,
                message=f"{name} {limit:g}: {rule.what} cannot be checked ({reason}); "
                        "treated as a violation",
            ))
            continue
        above = rule.side == "above"
        if (above and observed.value > limit) or (not above and observed.value < limit):
            violations.append(ThresholdViolation(
                name=name, threshold=limit, observed=observed.value,
                message=f"{name} {limit:g}: {rule.what} is {_fmt(observed)}, "
                        f"{'above' if above else 'below'} the limit",
            ))
    return violations
