"""Fitting a probe head (strategy ``probe``): class-balanced multinomial logistic regression
from stored hidden-state vectors to the gold labels, with the same machinery as the linear
rule (:mod:`judge.fitting.logistic`): the L2 strength by grouped cross-validated balanced
log-loss, the review threshold from out-of-fold verdicts for a queue recall with 95%
confidence.

Without a prior the features are standardised on the fitting claims and the penalty pulls
toward 0. With a prior head (a domain's head shrunk toward the default head) the prior's
standardisation is kept and the penalty pulls toward its weights, over stronger strengths
too: at the strongest the domain keeps the prior's weights and refits only its intercepts.

A language shift (:class:`judge.decide.probe_head.LanguageShift`, the offsets of the head that
decides the claims now) is kept, not fitted: the vectors are shifted by it before the fit and
the fitted head carries it, so it decides new claims the way it was fitted.

The fitted head records how far its vectors reach in its standardisation
(:class:`judge.decide.probe_head.Reach`; a domain's head, the wider of its own and its
prior's), so a vector far beyond that is refused when the head decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from judge.decide.options import TIE_ORDER
from judge.decide.probe_head import LanguageHeads, LanguageShift, ProbeHead, Reach, canonical
from judge.fitting.logistic import (
    Fitted,
    balanced_accuracy,
    balanced_log_loss,
    fit_standardised,
    over_folds,
    queue_threshold,
)
from judge.verdicts import LABELS

#: The L2 strengths tried (on the summed, class-balanced loss over standardised 1,536-number
#: vectors: stronger than the linear rule's, which weighs 13 features).
HEAD_LAMBDAS: tuple[float, ...] = (10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
#: With a prior head, stronger penalties too (toward the prior's weights).
PRIOR_HEAD_LAMBDAS: tuple[float, ...] = HEAD_LAMBDAS + (30000.0, 100000.0, 1000000.0)

_TIE_RANK = np.array([TIE_ORDER.index(label) for label in LABELS])


def fit_head(x: np.ndarray, y: np.ndarray, lam: float, prior: ProbeHead | None = None,
             about: dict[str, Any] | None = None, weight: np.ndarray | None = None,
             allowed: np.ndarray | None = None) -> ProbeHead:
    """One head fitted on vectors ``x`` (n x d) and gold label indexes ``y``; ``weight`` and
    ``allowed`` as :func:`judge.fitting.logistic.fit_standardised` reads them."""
    x = np.asarray(x, dtype=np.float64)
    center: np.ndarray | None = None
    start: np.ndarray | None = None
    if prior is not None:
        mu, sd = prior.mean, prior.scale
        order = [prior.labels.index(label) for label in LABELS]
        center = prior.coef[order].T
        start = np.vstack([center, prior.intercept[order]]).ravel()
    else:
        mu, sd = x.mean(0), x.std(0)
        sd = np.where(sd > 1e-8, sd, 1.0)
    z = (x - mu) / sd
    w = fit_standardised(z, y, lam, center, start, weight, allowed)
    # how far the fitted vectors reach (a domain's head also reads what its prior read)
    reach = Reach.of(z).widest(prior.reach() if prior is not None else None)
    head = ProbeHead(tuple(LABELS), mu, sd, w[:-1].T.copy(), w[-1].copy(), dict(about or {}),
                     fitted_range=reach)
    return canonical(head)[0]


def predict_head(x: np.ndarray, head: ProbeHead, texts: Sequence[str] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(label indexes in :data:`LABELS` order, probabilities per label, column 0 =
    P(supported)), deciding as :func:`judge.decide.probe.decide_probe` does (exact ties go
    to the earliest of TIE_ORDER); ``texts``: what the probe read for each vector
    (:attr:`judge.fitting.items.FitItem.read`), needed by a head with a language shift."""
    probs = head.probabilities(x, texts)
    order = [head.labels.index(label) for label in LABELS]
    probs = probs[:, order]
    best = probs.max(1, keepdims=True)
    tied = np.where(probs == best, _TIE_RANK[None, :], len(LABELS))
    return tied.argmin(1), probs


#: the weight of each fitted item, given the indexes of the items a head is fitted on (a
#: pool's weighting is computed on the items fitted, so each fold's head weighs its own)
Weigh = Callable[[np.ndarray], np.ndarray]


def head_out_of_fold(x: np.ndarray, y: np.ndarray, fold: Sequence[int], lam: float,
                     prior: ProbeHead | None = None, weigh: Weigh | None = None,
                     allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities) of each item from a head fitted without its fold (``weigh``,
    ``allowed``: as :func:`fit_head` reads them, for the items fitted)."""
    return over_folds(fold, len(y), lambda rest, held: predict_head(
        x[held], fit_head(x[rest], y[rest], lam, prior,
                          weight=None if weigh is None else weigh(rest),
                          allowed=None if allowed is None else allowed[rest])))


def choose_head(x: np.ndarray, y: np.ndarray, fold: Sequence[int], prior: ProbeHead | None,
                lambdas: Sequence[float], weigh: Weigh | None = None,
                allowed: np.ndarray | None = None
                ) -> tuple[float, ProbeHead, dict[float, tuple[np.ndarray, np.ndarray]],
                           dict[float, float]]:
    """The L2 strength with the lowest grouped cross-validated balanced log-loss (ties: the
    stronger; with ``allowed``, of each item's label set, never of a model's split inside
    it), the head fitted with it on every item, each strength's out-of-fold
    (labels, probabilities) and its loss."""
    with threadpool_limits(limits=1, user_api="blas"):
        oof = {lam: head_out_of_fold(x, y, fold, lam, prior, weigh, allowed)
               for lam in lambdas}
        cv_loss = {v: balanced_log_loss(oof[v][1], y, allowed) for v in lambdas}
        lam = min(lambdas, key=lambda v: (cv_loss[v], -v))
        head = fit_head(x, y, lam, prior,
                        weight=None if weigh is None else weigh(np.arange(len(y))),
                        allowed=allowed)
    return lam, head, oof, cv_loss


def fit_probe_rule(x: np.ndarray, y: np.ndarray, fold: Sequence[int], queue_recall: float = 0.9,
                   prior: ProbeHead | None = None, about: dict[str, Any] | None = None,
                   lambdas: Sequence[float] | None = None, shift: LanguageShift | None = None,
                   texts: Sequence[str] | None = None, weigh: Weigh | None = None,
                   allowed: np.ndarray | None = None,
                   languages: LanguageHeads | None = None) -> Fitted:
    """The whole fit, as :func:`judge.fitting.logistic.fit_rule` does it for the linear
    rule: the L2 strength by grouped cross-validation, the head on every item, the review
    threshold on the out-of-fold verdicts. ``shift``: the language offsets the head keeps,
    applied to ``x`` first (``texts``: what the probe read for each vector). ``weigh`` and
    ``allowed``: a pool's weighting and the label sets people gave (:func:`fit_head`).
    ``languages``: the heads per language the head keeps (those of the head deciding now),
    attached unchanged: the fit and its out-of-fold figures are the outer head's, on every
    item."""
    x = np.asarray(x, dtype=np.float64)
    if shift is not None:
        if texts is None:
            raise ValueError("a fit that keeps a language shift needs the texts read")
        x = shift.apply(x, texts)
    if lambdas is None:
        lambdas = PRIOR_HEAD_LAMBDAS if prior is not None else HEAD_LAMBDAS
    lam, head, oof, cv_loss = choose_head(x, y, fold, prior, lambdas, weigh, allowed)
    cv_acc = {v: balanced_accuracy(oof[v][0], y, allowed) for v in lambdas}
    queue = queue_threshold(oof[lam][0], oof[lam][1][:, 0], y, queue_recall)
    info = {**(about or {}), "l2": lam, "n": int(len(y)),
            "review_support_below": queue["review_support_below"],
            "shrunk_toward": (prior.about.get("name") if prior is not None else None)}
    head = canonical(replace(head, about=info, shift=shift, languages=languages))[0]
    return Fitted(head, lam, queue["review_support_below"], (f"h{head.dim}",), len(y), cv_loss,
                  cv_acc, queue, shrunk_toward_current=prior is not None,
                  lambdas=tuple(lambdas), out_of_fold=oof[lam])
