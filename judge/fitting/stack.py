"""Fitting the stacked flag score's weights (:mod:`judge.review.score`) on human gold, out of
fold, and the scores a threshold is set on.

The inputs are claims whose support scores no head fitted on them gave (the fit's out-of-fold
P(supported)), their evidence strengths, whether people rejected them, and their folds (grouped
by source, :func:`judge.fitting.split.folds_of`). A 3-weight logistic (intercept, logit of the
support, strength) of "supported" is fitted by Newton's method with a small ridge on the
weights but the intercept (:data:`RIDGE`). Each claim's stacked score comes from the weights
fitted without its fold; the weights kept are fitted on every claim. Claims the queue takes
whatever its score (support ``-inf``) are left out of the fit and keep ``-inf``; claims without
a strength fail closed (``-inf``). The threshold is then set on the out-of-fold stacked scores
by the exact binomial bound, as for the support score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judge.review.score import STACKED, ScoreSpec, logit

#: L2 penalty on the two slopes (the intercept is free): only keeps Newton's method stable
RIDGE = 1e-3


@dataclass
class StackFit:
    """The weights fitted on every claim and each claim's out-of-fold stacked score."""

    spec: ScoreSpec
    out_of_fold: list[float]
    #: claims in the fit (not forced, with a strength)
    n_fit: int


def _features(support: np.ndarray, strength: np.ndarray) -> np.ndarray:
    lg = np.array([logit(float(s)) for s in support])
    return np.column_stack([np.ones(len(lg)), lg, strength])


def fit_weights(support: Sequence[float], strength: Sequence[float],
                supported: Sequence[bool], ridge: float = RIDGE,
                iterations: int = 100) -> ScoreSpec:
    """The stacked spec's weights fitted on these claims (Newton's method, ridge on the
    slopes)."""
    x = _features(np.asarray(support, dtype=float), np.asarray(strength, dtype=float))
    y = np.asarray(supported, dtype=float)
    if len(y) == 0 or y.min() == y.max():
        raise ValueError("the stacked score needs supported and rejected claims to fit")
    w = np.zeros(3)
    pen = np.diag([0.0, ridge, ridge]) * len(y)
    for _ in range(iterations):
        z = np.clip(x @ w, -35, 35)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = x.T @ (p - y) + pen @ w
        hess = (x * (p * (1 - p))[:, None]).T @ x + pen + 1e-9 * np.eye(3)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return ScoreSpec(STACKED, float(w[0]), float(w[1]), float(w[2]))


def fit_stack(support: Sequence[float], strength: Sequence[float | None],
              problems: Sequence[bool], folds: Sequence[int]) -> StackFit:
    """Weights on every usable claim, and each claim's stacked score from the weights fitted
    without its fold (module docstring). ``support``: out-of-fold P(supported), ``-inf`` for
    claims the queue always takes."""
    s = np.asarray(support, dtype=float)
    st = np.array([math.nan if v is None else float(v) for v in strength])
    fold = np.asarray(folds)
    use = np.isfinite(s) & np.isfinite(st)
    sup = ~np.asarray(problems, dtype=bool)
    spec = fit_weights(s[use], st[use], sup[use])
    out = np.full(len(s), -math.inf)
    for k in sorted(set(fold[use].tolist())):
        train, test = use & (fold != k), use & (fold == k)
        w = fit_weights(s[train], st[train], sup[train])
        out[test] = [w.score(float(a), float(b)) for a, b in zip(s[test], st[test],
                                                                    strict=True)]
    return StackFit(spec, out.tolist(), int(use.sum()))


def apply(spec: ScoreSpec, support: Sequence[float], strength: Sequence[float | None]
          ) -> list[float]:
    """``spec``'s scores (``-inf`` stays ``-inf``; no strength: ``-inf``)."""
    return [s if s == -math.inf else spec.score(s, t)
            for s, t in zip(support, strength, strict=True)]
