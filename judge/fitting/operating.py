"""The operating point a fitted probe head's queue starts from (issue 32, "every review
teaches"): the review queue's threshold (:mod:`judge.review.triage`) re-set on the fit's own
gold, from flag scores no head saw in its fit.

A head's support scores on the claims it was fitted on are better than it will ever be on new
claims; a threshold set on them would state a recall the queue does not deliver. So each
fitted claim's score comes from a head fitted without its fold (the folds of the fit, grouped
by answer, with the fit's L2 strength and prior), and each held-out claim's from the fitted
head. A claim the queue takes whatever its score (:func:`judge.review.triage.forced` on its
stored verdict: judge errors, failed checks, refusals) gets ``-inf``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibration.operating_point import (
    STANDARD_CONFIDENCES,
    STANDARD_TARGETS,
    set_operating_point,
)
from judge.decide.probe_head import ProbeHead
from judge.fitting.items import FitItem
from judge.fitting.probe import head_out_of_fold, predict_head
from judge.labels import Label


@dataclass
class PointGold:
    """Flag scores of the fit's gold claims that no fitted head saw, for setting points."""

    scores: list[float]
    problems: list[bool]
    #: a statement per (target recall, confidence) of the standard grid
    statements: dict[str, str] = field(default_factory=dict)

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
                  lam: float, prior: ProbeHead | None, fold: Sequence[int],
                  queue_recall: float = 0.9) -> PointGold:
    """The flag scores of ``fit_items`` (out of fold) and ``held`` (by ``head``), with the
    statement of the point each standard target would give."""
    from judge.review.queue import claim_reasons
    from judge.review.triage import forced

    support: list[float] = []
    if fit_items:
        x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in fit_items])
        y = np.array([i.y for i in fit_items])
        _, probs = head_out_of_fold(x, y, fold, lam, prior)
        support += probs[:, 0].tolist()
    if held:
        _, probs = predict_head(
            np.vstack([np.asarray(i.vector, dtype=np.float64) for i in held]), head)
        support += probs[:, 0].tolist()
    items = [*fit_items, *held]
    scores = [-math.inf if forced(i.row["label"], claim_reasons(i.row)) else float(s)
              for i, s in zip(items, support, strict=True)]
    out = PointGold(scores, [i.label != Label.SUPPORTED for i in items])
    for target, confidence in point_targets(queue_recall):
        p = set_operating_point(out.scores, out.problems, target_recall=target,
                                confidence=confidence)
        out.statements[point_key(target, confidence)] = p.statement()
    return out
