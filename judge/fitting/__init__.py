"""Fitting the ``scores`` strategy's decision rule from a team's own reviewed claims
(``judge fit``, :func:`judge.fit`): zero model calls, everything is read from the store.
(The package is ``fitting`` because ``judge.fit`` is the public function.)

- :mod:`~judge.fitting.items`: gold matched to the stored verdicts of a ``scores`` judge version;
  each claim's option log-probabilities from its stored score call (found by the key the
  pipeline uses, so a fitted rule never needs a new call) and its features computed by
  :func:`judge.decide.linear.features`, the function the pipeline uses;
- :mod:`~judge.fitting.split`: answer groups, seeded folds, the grouped holdout, the minimum gold;
- :mod:`~judge.fitting.logistic`: class-balanced multinomial logistic regression, the L2
  strength by grouped cross-validated balanced log-loss, the review threshold for a queue
  recall with 95% confidence;
- :mod:`~judge.fitting.evaluate`: verdicts of a config on stored scores exactly as the pipeline
  gives them, holdout figures with intervals, the drift report, the adoption rule;
- :mod:`~judge.fitting.curve`: quality against the number of reviewed claims;
- :mod:`~judge.fitting.operating`: a fitted head's gold flag scores no fitted head saw, on
  which the candidate's review-queue operating points are set;
- :mod:`~judge.fitting.toml`: the fitted judge config as TOML;
- :mod:`~judge.fitting.run`: :func:`~judge.fitting.run.fit_store`, all of it in order.

May import config, records, verdicts, decide, assembly, models (prompts, identity, and the
client in replay mode only), store (reading), evaluation (gold, matching, provenance,
drift's stored-version config), review (gold export; triage's forced flags and the queue's
claim reasons), runs.loop, outputs (safe output files)
and calibration; never api, cli or service.
"""

from __future__ import annotations

from judge.evaluation import CalibrationRefused, EvaluationError


class FitError(EvaluationError):
    """A fit that cannot be made (unknown version, no stored score calls, ...)."""


class FitRefused(CalibrationRefused):
    """A fit the rules forbid: too little gold, a judge version that is not ``scores``, gold
    labelled by a model, answers the judge model's family generated. No override exists."""


__all__ = ["FitError", "FitRefused"]
