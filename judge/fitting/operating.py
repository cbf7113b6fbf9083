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
from judge.labels import Label


@dataclass
class PointGold:
    """Flag scores of the fit's gold claims that no fitted head saw, for setting points."""

    scores: list[float]
    problems: list[bool]
    #: a statement per (target recall, confidence) of the standard grid
    statements: dict[str, str] = field(default_factory=dict)

    def statement(self, target: float, confidence: float = DEFAULT_CONFIDENCE) -> str:
        """The point's statement at ``target`` and ``confidence`` ('no point' off the grid)."""
        return self.statements.get(point_key(target, confidence), "no point")

    def summary(self) -> dict[str, Any]:
        return {"n": len(self.scores), "problems": int(sum(self.problems)),
                "always_taken": sum(1 for s in self.scores if s == -math.inf),
                "method": "out of fold (fitted claims) and held out (held-out claims)",
                "points": self.statements}


def point_key(target: float, confidence: float) -> str:
    return f"{target:.2f}@{confidence:.2f}"


def point_targets(queue_recall: float) -> list[tuple[float, float]]:
    """The standard grid of targets and confidences, and ``queue_recall`` at each confidence."""
    targets = sorted(set(STANDARD_TARGETS) | {round(queue_recall, 6)})
    return [(t, c) for t in targets for c in STANDARD_CONFIDENCES]


def unseen_scores(fit_items: Sequence[FitItem], held: Sequence[FitItem], head: ProbeHead,
                  out_of_fold_support: Sequence[float], queue_recall: float = 0.9
                  ) -> PointGold:
    """The flag scores of ``fit_items`` (``out_of_fold_support``: the fit's own out-of-fold
    P(supported), :attr:`judge.fitting.logistic.Fitted.out_of_fold`) and ``held`` (by
    ``head``), with the statement of the point each standard target would give."""
    support = [float(v) for v in out_of_fold_support]
    if held:
        _, probs = predict_head(
            np.vstack([np.asarray(i.vector, dtype=np.float64) for i in held]), head,
            [i.read for i in held])
        support += probs[:, 0].tolist()
    items = [*fit_items, *held]
    scores = [_flag_score(i.row, s) for i, s in zip(items, support, strict=True)]
    out = PointGold(scores, [i.label != Label.SUPPORTED for i in items])
    for target, confidence in point_targets(queue_recall):
        p = set_operating_point(out.scores, out.problems, target_recall=target,
                                confidence=confidence)
        out.statements[point_key(target, confidence)] = p.statement()
    return out


def _flag_score(row: dict[str, Any], support: float) -> float:
    """The queue's own flag score of a stored verdict, its support the unseen one."""
    from judge.review.triage import flag_score

    score = flag_score({**row, "support": support})
    assert score is not None  # a support is given
    return score
