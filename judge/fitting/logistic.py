"""The fit: class-balanced multinomial logistic regression over the rule's features, the L2
strength chosen by grouped cross-validation, and the review threshold for a queue recall.

Features are standardised for the fit and the weights written back in raw units (rounded to
:data:`DECIMALS` places, as a judge config pins them), with an L2 penalty on the weights
(not the intercepts) toward 0, or toward a prior rule's weights (a domain's rule shrunk toward
the rule that decides it now; then over :data:`PRIOR_LAMBDAS`). The penalty strength is the
value of :data:`LAMBDAS` with the lowest
grouped k-fold cross-validated *balanced log-loss* (a proper scoring rule, so the
probabilities the queue threshold reads stay honest; ties go to the stronger penalty).
``review_support_below`` is the smallest value of :data:`QUEUE_GRID` whose queue, judged
out of fold, catches the target share of human-rejected claims with 95% confidence (the
lower Wilson bound reaches it). Predictions go through
:func:`judge.decide.linear.decide_linear`, the pipeline's own decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from calibration.stats import wilson_bounds
from judge.config.score_model import ScoreModel
from judge.decide.linear import decide_linear
from judge.decide.probe_head import ProbeHead
from judge.verdicts import LABELS

#: The L2 strengths tried (the grid the embedded default's fit used).
LAMBDAS: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
#: With a prior rule (shrinking toward the current rule), stronger penalties too: at the
#: strongest the fit keeps the current rule's weights and refits only its intercepts.
PRIOR_LAMBDAS: tuple[float, ...] = LAMBDAS + (3000.0, 10000.0, 100000.0)
#: The ``review_support_below`` values tried.
QUEUE_GRID: tuple[float, ...] = tuple(float(v) for v in np.round(np.arange(0.0, 0.951, 0.05), 2))
DECIMALS = 4
FOLDS = 10

Features = Sequence[dict[str, float]]


def matrix(values: Features, names: Sequence[str]) -> np.ndarray:
    return np.array([[v[name] for name in names] for v in values], dtype=float)


def fit_standardised(z: np.ndarray, y: np.ndarray, lam: float,
                     center: np.ndarray | None = None, start: np.ndarray | None = None,
                     weight: np.ndarray | None = None, allowed: np.ndarray | None = None
                     ) -> np.ndarray:
    """L2-penalised multinomial logistic regression on standardised features ``z`` (n x d):
    the weights (d x labels) and, in the last row, the intercepts. Each item weighs
    ``weight`` (default: class-balanced). The penalty pulls the weights (not the intercepts)
    toward ``center`` (default 0).

    ``allowed`` (n x labels, booleans; default: the gold label alone) lets a person's label
    name a set of labels: the item's likelihood is the probability of the set (a summary
    people judged "inconsistent" is contradicted or not in the source, without saying
    which)."""
    n, d = z.shape
    k = len(LABELS)
    z1 = np.hstack([z, np.ones((n, 1))])
    center = np.zeros((d, k)) if center is None else center
    start = np.zeros((d + 1) * k) if start is None else start
    if weight is None:
        present = [c for c in range(k) if (y == c).any()]
        weight = np.array([1.0 / np.mean(y == c) if c in present else 0.0
                           for c in range(k)])[y]
        weight /= weight.mean()
    mask = np.eye(k, dtype=bool)[y] if allowed is None else np.asarray(allowed, dtype=bool)
    if mask.shape != (n, k) or not mask.any(1).all():
        raise ValueError("every item needs at least one allowed label")

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(d + 1, k)
        s = z1 @ w
        s -= s.max(1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(1, keepdims=True)
        off = w[:-1] - center
        kept = np.where(mask, p, 0.0)
        mass = kept.sum(1)
        value = -(weight * np.log(mass + 1e-12)).sum() + lam * (off ** 2).sum()
        # d(-log mass)/ds = p - (p restricted to the allowed labels, renormalised)
        target = kept / np.maximum(mass, 1e-300)[:, None]
        grad = z1.T @ ((p - target) * weight[:, None])
        grad[:-1] += 2 * lam * off
        return float(value), grad.ravel()

    return minimize(loss, start, jac=True, method="L-BFGS-B").x.reshape(d + 1, k)  # type: ignore[no-any-return]


def fit(x: np.ndarray, y: np.ndarray, lam: float, names: Sequence[str],
        prior: ScoreModel | None = None) -> ScoreModel:
    """Class-balanced, L2-penalised multinomial logistic regression; weights in raw units.

    Without ``prior`` the penalty pulls the weights toward 0; with it, toward the prior
    rule's weights (in the same standardised units), so where the gold says little (a label
    with few claims, a small domain) the fitted rule stays close to the current one."""
    d = x.shape[1]
    k = len(LABELS)
    mu, sd = x.mean(0), x.std(0)
    sd[sd == 0] = 1.0
    center = start = None
    if prior is not None:
        raw0 = np.array([[prior.weights.get(LABELS[c], {}).get(f, 0.0) for c in range(k)]
                         for f in names], dtype=float).reshape(d, k)
        center = raw0 * sd[:, None]
        intercept0 = np.array([prior.intercept.get(label, 0.0) for label in LABELS])
        start = np.vstack([center, intercept0 + (mu[:, None] * raw0).sum(0)]).ravel()
    w = fit_standardised((x - mu) / sd, y, lam, center, start)
    raw = w[:-1] / sd[:, None]
    intercept = w[-1] - (mu[:, None] * raw).sum(0)
    return ScoreModel(
        weights={LABELS[c]: {f: round(float(raw[j, c]), DECIMALS) for j, f in enumerate(names)}
                 for c in range(k)},
        intercept={LABELS[c]: round(float(intercept[c]), DECIMALS) for c in range(k)},
    )


def predict(values: Features, model: ScoreModel) -> tuple[np.ndarray, np.ndarray]:
    """(label indexes, probabilities per label) as the pipeline decides; column 0 is
    P(supported)."""
    out = [decide_linear(v, model) for v in values]
    return (np.array([LABELS.index(label) for label, _ in out], dtype=int),
            np.array([[probs[label] for label in LABELS] for _, probs in out]).reshape(-1, 4))


def _classes(y: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Each item's class for balancing: its gold label, or with ``allowed`` (n x labels, the
    label sets people gave, e.g. SummEdits' "inconsistent" as {contradicted, not_in_source})
    its set, so that a model-written split inside a set never makes two classes."""
    if allowed is None:
        return np.asarray(y)
    return np.unique(np.asarray(allowed, dtype=bool), axis=0, return_inverse=True)[1].ravel()


def balanced_accuracy(pred: np.ndarray, y: np.ndarray,
                      allowed: np.ndarray | None = None) -> float:
    """Mean over the classes present of the share predicted right: the gold label, or with
    ``allowed`` any label of the item's set."""
    right = (pred == y) if allowed is None else np.asarray(allowed, dtype=bool)[
        np.arange(len(pred)), pred]
    classes = _classes(y, allowed)
    return float(np.mean([right[classes == c].mean() for c in np.unique(classes)]))


def balanced_log_loss(probs: np.ndarray, y: np.ndarray,
                      allowed: np.ndarray | None = None) -> float:
    """Mean over the classes present of the mean -log P(gold label), or with ``allowed``
    -log P(the item's label set)."""
    p = (probs[np.arange(len(y)), y] if allowed is None
         else (probs * np.asarray(allowed, dtype=bool)).sum(axis=1))
    loss = -np.log(np.clip(p, 1e-12, 1.0))
    classes = _classes(y, allowed)
    return float(np.mean([loss[classes == c].mean() for c in np.unique(classes)]))


def over_folds(fold: Sequence[int], n: int,
               fit_predict: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
               ) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities) of each of ``n`` items, each from ``fit_predict(rest, held)``
    fitted without the item's fold (the indexes of the other folds, then of the fold)."""
    fold_arr = np.asarray(fold)
    pred = np.zeros(n, dtype=int)
    probs = np.zeros((n, len(LABELS)))
    for f in sorted(set(fold_arr.tolist())):
        held = np.flatnonzero(fold_arr == f)
        rest = np.flatnonzero(fold_arr != f)
        if len(rest):
            pred[held], probs[held] = fit_predict(rest, held)
    return pred, probs


def out_of_fold(values: Features, y: np.ndarray, fold: Sequence[int], lam: float,
                names: Sequence[str], prior: ScoreModel | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities) of each item from a rule fitted without its fold."""
    def fit_predict(rest: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        model = fit(matrix([values[int(j)] for j in rest], names), y[rest], lam, names, prior)
        return predict([values[int(j)] for j in held], model)

    return over_folds(fold, len(values), fit_predict)


def queue_threshold(pred: np.ndarray, p_s: np.ndarray, y: np.ndarray, recall: float
                    ) -> dict[str, Any]:
    """The smallest ``review_support_below`` whose queue catches ``recall`` of the
    human-rejected claims with 95% confidence (the lower Wilson bound of the measured recall
    reaches it; a point estimate that merely reaches it misses it on new claims about half
    the time); the largest value tried when none does."""
    rejected = y != 0
    chosen = QUEUE_GRID[-1]
    reached = False
    if rejected.any():
        for t in QUEUE_GRID:
            caught = ((pred != 0) | (p_s < t))[rejected]
            if wilson_bounds(float(caught.mean()), len(caught))[0] >= recall:
                chosen, reached = t, True
                break
    review = (pred != 0) | (p_s < chosen)
    return {"review_support_below": float(chosen),
            "queue_recall": round(float(review[rejected].mean()), 3) if rejected.any() else None,
            "queue_load": round(float(review.mean()), 3),
            "target_reached": reached}


@dataclass
class Fitted:
    """A fitted rule and how it was chosen."""

    #: the linear rule (strategy ``scores``) or the head (strategy ``probe``)
    model: ScoreModel | ProbeHead
    l2: float
    review_support_below: float
    features: tuple[str, ...]
    n: int
    cv_balanced_log_loss: dict[float, float]
    cv_balanced_accuracy: dict[float, float]
    queue: dict[str, Any]
    shrunk_toward_current: bool = False
    #: the L2 strengths tried (None: the linear rule's grid)
    lambdas: tuple[float, ...] | None = None
    #: a probe head's out-of-fold (labels, probabilities) at the chosen strength, on the folds
    #: it was fitted with (None: the linear rule)
    out_of_fold: tuple[Any, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "features": list(self.features),
            "shrunk_toward_current": self.shrunk_toward_current,
            "lambdas": list(self.lambdas or (
                PRIOR_LAMBDAS if self.shrunk_toward_current else LAMBDAS)),
            "folds": FOLDS,
            "cross_validated_balanced_log_loss": {
                str(k): round(v, 4) for k, v in self.cv_balanced_log_loss.items()},
            "cross_validated_balanced_accuracy": {
                str(k): round(v, 3) for k, v in self.cv_balanced_accuracy.items()},
            "l2": self.l2,
            "review_support_below": self.review_support_below,
            "queue_recall_out_of_fold": self.queue["queue_recall"],
            "queue_load_out_of_fold": self.queue["queue_load"],
            "queue_target_reached": self.queue["target_reached"],
            **({"probe_head": {"about": self.model.about, "dim": self.model.dim}}
               if isinstance(self.model, ProbeHead)
               else {"score_model": self.model.model_dump()}),
        }


def fit_rule(values: Features, y: np.ndarray, fold: Sequence[int], names: Sequence[str],
             queue_recall: float = 0.9, prior: ScoreModel | None = None) -> Fitted:
    """The whole fit: the L2 strength by grouped cross-validation, the rule on every item,
    the review threshold on the out-of-fold verdicts (in-sample ones are optimistic, so a
    threshold fitted on them misses the recall target on new claims). With ``prior`` the
    penalty shrinks toward that rule (:func:`fit`), over :data:`PRIOR_LAMBDAS`."""
    names = tuple(names)
    lambdas = PRIOR_LAMBDAS if prior is not None else LAMBDAS
    # one BLAS thread: for matrices this small, OpenBLAS's threads only wait on each other
    # (tens of times slower on a busy machine)
    with threadpool_limits(limits=1, user_api="blas"):
        oof = {lam: out_of_fold(values, y, fold, lam, names, prior) for lam in lambdas}
        cv_loss = {v: balanced_log_loss(oof[v][1], y) for v in lambdas}
        lam = min(lambdas, key=lambda v: (cv_loss[v], -v))  # ties: the stronger penalty
        model = fit(matrix(values, names), y, lam, names, prior)
    cv_acc = {v: balanced_accuracy(oof[v][0], y) for v in lambdas}
    queue = queue_threshold(oof[lam][0], oof[lam][1][:, 0], y, queue_recall)
    return Fitted(model, lam, queue["review_support_below"], names, len(values), cv_loss,
                  cv_acc, queue, shrunk_toward_current=prior is not None)
