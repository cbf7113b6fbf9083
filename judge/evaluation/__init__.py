"""Evaluation: the judge measured against human gold, and judge versions against each other.

- :mod:`~judge.evaluation.gold`: gold files (reading, line-numbered validation, provenance);
- :mod:`~judge.evaluation.matching`: gold items as answer records, and placing every gold item
  on a stored verdict;
- :mod:`~judge.evaluation.calibrate`: the calibration report (self-grading ban, validity gate);
- :mod:`~judge.evaluation.drift`: two judge versions on the same claims;
- :mod:`~judge.evaluation.reports`: JSON and HTML renderings, and cost.
- :mod:`~judge.evaluation.operating`: the review queue's operating point set from gold.

The statistics live in :mod:`calibration` (pure functions). May import store, records,
verdicts, split.claims (claim ids), review (queue reading order, reviewer identities), models
(identity), config, version (re-running a stored version), runs.summary and calibration;
never api, cli or service (judging goes through :mod:`judge.api`, its caller).
"""

from __future__ import annotations

from judge.errors import JudgeError


class EvaluationError(JudgeError, ValueError):
    """A request that cannot be served (unknown version, nothing matched, ...)."""


class CalibrationRefused(EvaluationError):
    """The self-grading ban or a provenance rule forbids this report. No override exists."""
