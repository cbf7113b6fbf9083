"""Calibration: the judge measured against people, and judge versions against each other.

Pure functions over plain data (no database, no CLI). The main entry points:

* :func:`build_calibration_report` — judge labels versus human gold labels for one judge
  version: confusion table, accuracy, kappa, error direction (lenient / strict), review queue
  recall and load, design-weighted estimates, per-dataset figures.
* :func:`human_agreement` — agreement between annotators, apart from the judge.
* :func:`build_drift_report` — two judge versions on the same claims;
  :func:`drift_verdict` says in one sentence which agrees more with people.
* :func:`check_thresholds` — which gates a report violates.
* :func:`render_calibration_html`, :func:`render_drift_html` — self-contained HTML pages.

The statistics behind them are in :mod:`calibration.stats`, :mod:`calibration.direction` and
:mod:`calibration.weighting`. Every rate is an :class:`Estimate` (value, interval, n); undefined
values are ``nan`` and dump as ``None``.

May import nothing from judge (the package stands alone).
"""

from calibration.direction import ErrorDirection, error_direction, lenient_rate, strict_rate
from calibration.drift import (
    DriftPair,
    DriftReport,
    Flip,
    RateChange,
    build_drift_report,
    drift_verdict,
)
from calibration.labels import JUDGE_ERROR, JUDGE_LABELS, LABELS
from calibration.render import render_calibration_html, render_drift_html
from calibration.report import (
    BUDGETS,
    CalibrationItem,
    CalibrationReport,
    Figures,
    HumanAgreement,
    HumanLabel,
    build_calibration_report,
    human_agreement,
    max_share_for_load,
    projected_load,
)
from calibration.results import Estimate, SignificanceResult
from calibration.thresholds import ThresholdViolation, check_thresholds
from calibration.weighting import (
    SamplingDesign,
    Stratum,
    WeightedEstimate,
    sampling_design,
    weighted_rate,
    weighted_shares,
)

__all__ = [
    "BUDGETS",
    "max_share_for_load",
    "projected_load",
    "JUDGE_ERROR",
    "JUDGE_LABELS",
    "LABELS",
    "CalibrationItem",
    "CalibrationReport",
    "DriftPair",
    "DriftReport",
    "ErrorDirection",
    "Estimate",
    "Figures",
    "Flip",
    "HumanAgreement",
    "HumanLabel",
    "RateChange",
    "SamplingDesign",
    "SignificanceResult",
    "Stratum",
    "ThresholdViolation",
    "WeightedEstimate",
    "build_calibration_report",
    "build_drift_report",
    "drift_verdict",
    "check_thresholds",
    "error_direction",
    "human_agreement",
    "lenient_rate",
    "render_calibration_html",
    "render_drift_html",
    "sampling_design",
    "strict_rate",
    "weighted_rate",
    "weighted_shares",
]
