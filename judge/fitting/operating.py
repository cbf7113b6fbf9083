"""The operating point a fitted probe head's queue starts from (issue 32, "every review
teaches"): the review queue's threshold (:mod:`judge.review.triage`) re-set on the fit's own
gold, from flag scores no head saw in its fit.

A head's support scores on the claims it was fitted on are better than it will ever be on new
claims; a threshold set on them would state a recall the queue does not deliver. So each
fitted claim's score comes from a head fitted without its fold (the folds of the fit, grouped
by answer, with the fit's L2 strength and prior), and each held-out claim's from the fitted
head. A claim the queue takes whatever its score (:func:`judge.review.triage.forced` on its
stored verdict: judge errors, failed checks, refusals) gets ``-inf``, as
:func:`judge.review.triage.flag_score` gives it.

With the fit's folds, the flag score is the stacked one (:mod:`judge.review.score`): its
weights are fitted on the fitted claims' out-of-fold supports and strengths, each fitted
claim's stacked score from the weights fitted without its fold
(:func:`judge.fitting.stack.fit_stack`), each held-out claim's from the weights fitted on
every fitted claim; the points carry the spec. When the weights cannot be fitted (one label
only among the scored claims) the points stay on the support score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibration.operating_point import (
    DEFAULT_CONFIDENCE,
    STANDARD_CONFIDENCES,
    STANDARD_TARGETS,
    set_operating_point,
)
from judge.decide.probe_head import ProbeHead
from judge.fitting.items import FitItem
from judge.fitting.probe import predict_head
from judge.fitting.stack import apply, fit_stack
from judge.labels import Label
from judge.review.score import ScoreSpec


@dataclass
class PointGold:
    """Flag scores of the fit's gold claims that no fitted head saw, for setting points."""

    scores: list[float]
    problems: list[bool]
    #: a statement per (target recall, confidence) of the standard grid
    statements: dict[str, str] = field(default_factory=dict)
    #: how the scores were formed (None: the support score)
    spec: ScoreSpec | None = None

    def statement(self, target: float, confidence: float = DEFAULT_CONFIDENCE) -> str:
        """The point's statement at ``target`` and ``confidence`` ('no point' off the grid)."""
        return self.statements.get(point_key(target, confidence), "no point")

    def summary(self) -> dict[str, Any]:
        return {"n": len(self.scores), "problems": int(sum(self.problems)),
                "always_taken": sum(1 for s in self.scores if s == -math.inf),
                "method": "out of fold (fitted claims) and held out (held-out claims)",
                "score": None if self.spec is None else self.spec.as_dict(),
                "points": self.statements}


def point_key(target: float, confidence: float) -> str:
    return f"{target:.2f}@{confidence:.2f}"


def point_targets(queue_recall: float) -> list[tuple[float, float]]:
    """The standard grid of targets and confidences, and ``queue_recall`` at each confidence."""
    targets = sorted(set(STANDARD_TARGETS) | {round(queue_recall, 6)})
    return [(t, c) for t in targets for c in STANDARD_CONFIDENCES]


def unseen_scores(fit_items: Sequence[FitItem], held: Sequence[FitItem], head: ProbeHead,
                  out_of_fold_support: Sequence[float], queue_recall: float = 0.9,
                  folds: Sequence[int] | None = None) -> PointGold:
    """The flag scores of ``fit_items`` (``out_of_fold_support``: the fit's own out-of-fold
    P(supported), :attr:`judge.fitting.logistic.Fitted.out_of_fold`) and ``held`` (by
    ``head``), with the statement of the point each standard target would give. ``folds``:
    the fit's folds of ``fit_items``; given, the scores are stacked (module docstring)."""
    support = [float(v) for v in out_of_fold_support]
    if held:
        _, probs = predict_head(
            np.vstack([np.asarray(i.vector, dtype=np.float64) for i in held]), head,
            [i.read for i in held])
        support += probs[:, 0].tolist()
    items = [*fit_items, *held]
    scores = [_flag_score(i.row, s) for i, s in zip(items, support, strict=True)]
    problems = [i.label != Label.SUPPORTED for i in items]
    spec = None
    if folds is not None:
        scores, spec = _stacked(items, scores, problems, list(folds), len(fit_items))
    out = PointGold(scores, problems, spec=spec)
    for target, confidence in point_targets(queue_recall):
        p = set_operating_point(out.scores, out.problems, target_recall=target,
                                confidence=confidence)
        statement = p.statement()
        if spec is not None:
            statement = statement.replace("support <", "stacked score <", 1)
        out.statements[point_key(target, confidence)] = statement
    return out


def _stacked(items: Sequence[FitItem], base: list[float], problems: list[bool],
             folds: list[int], n_fit: int) -> tuple[list[float], ScoreSpec | None]:
    """The stacked scores of ``items`` (the first ``n_fit`` fitted, out of fold; the rest
    held out) from their flag scores ``base``, and the spec; ``base`` and None when the
    weights cannot be fitted."""
    strength = [i.row.get("strength") for i in items]
    try:
        fit = fit_stack(base[:n_fit], strength[:n_fit], problems[:n_fit], folds)
    except ValueError:
        return base, None
    return fit.out_of_fold + apply(fit.spec, base[n_fit:], strength[n_fit:]), fit.spec


def _flag_score(row: dict[str, Any], support: float) -> float:
    """The queue's own flag score of a stored verdict, its support the unseen one."""
    from judge.review.triage import flag_score

    score = flag_score({**row, "support": support})
    assert score is not None  # a support is given
    return score
