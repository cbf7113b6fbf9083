"""The stacked flag score's weights (:mod:`judge.fitting.stack`): fitted out of fold, each
claim's score from weights that never saw its fold; forced claims and claims without a
strength stay flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judge.fitting.stack import apply, fit_stack, fit_weights


def synthetic(n: int = 400, seed: int = 0) -> tuple[list[float], list[float | None],
                                                    list[bool], list[int]]:
    rng = np.random.default_rng(seed)
    problem = rng.random(n) < 0.5
    support = 1 / (1 + np.exp(-(rng.normal(0, 1, n) + np.where(problem, -1.0, 1.0))))
    strength = np.clip(rng.normal(0.6, 0.15, n) + np.where(problem, -0.1, 0.1), 0, 1)
    folds = [int(k) for k in rng.integers(0, 10, n)]
    return support.tolist(), strength.tolist(), problem.tolist(), folds


def test_each_claim_s_stacked_score_comes_from_weights_fitted_without_its_fold() -> None:
    support, strength, problems, folds = synthetic()
    fit = fit_stack(support, strength, problems, folds)
    assert fit.n_fit == len(support) and fit.spec.strength > 0 and fit.spec.support_logit > 0
    sup = [not p for p in problems]
    for k in (0, 3):
        train = [i for i, f in enumerate(folds) if f != k]
        w = fit_weights([support[i] for i in train], [strength[i] for i in train],
                        [sup[i] for i in train])
        for i, f in enumerate(folds):
            if f == k:
                assert fit.out_of_fold[i] == pytest.approx(w.score(support[i], strength[i]))
    # relabelling fold 0's claims moves every score but theirs
    flipped = [(not p) if f == 0 else p for p, f in zip(problems, folds, strict=True)]
    again = fit_stack(support, strength, flipped, folds)
    for i, f in enumerate(folds):
        if f == 0:
            assert again.out_of_fold[i] == fit.out_of_fold[i]
    assert any(again.out_of_fold[i] != fit.out_of_fold[i]
               for i, f in enumerate(folds) if f != 0)


def test_forced_claims_and_claims_without_strength_stay_flagged() -> None:
    support, strength, problems, folds = synthetic(200, seed=1)
    support[0] = -math.inf
    strength[1] = None
    fit = fit_stack(support, strength, problems, folds)
    assert fit.out_of_fold[0] == -math.inf and fit.out_of_fold[1] == -math.inf
    assert fit.n_fit == 198
    assert apply(fit.spec, [-math.inf, 0.8, 0.8], [0.5, None, 0.5])[:2] == [-math.inf,
                                                                          -math.inf]
    with pytest.raises(ValueError):
        fit_weights([0.2, 0.4], [0.5, 0.5], [True, True])
