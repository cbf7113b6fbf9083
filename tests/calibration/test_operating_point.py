"""The operating point's guarantee, on synthetic scores with known distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as sps

from calibration.operating_point import (
    min_problems,
    miss_upper_bound,
    recall_at,
    set_operating_point,
)

#: problem claims score low, supported ones high; both overlap, as a real judge's do
PROBLEMS = sps.beta(2, 5)
SUPPORTED = sps.beta(5, 2)


def draw(rng: np.random.Generator, n_problems: int, n_supported: int
         ) -> tuple[np.ndarray, np.ndarray]:
    scores = np.concatenate([PROBLEMS.rvs(n_problems, random_state=rng),
                             SUPPORTED.rvs(n_supported, random_state=rng)])
    return scores, np.r_[np.ones(n_problems, bool), np.zeros(n_supported, bool)]


@pytest.mark.parametrize(("n_problems", "target", "confidence"), [
    (40, 0.9, 0.9), (150, 0.9, 0.9), (150, 0.8, 0.95), (400, 0.95, 0.8)])
def test_the_stated_recall_holds_in_at_least_the_stated_share_of_seeded_draws(
        n_problems: int, target: float, confidence: float) -> None:
    rng = np.random.default_rng(20261203)
    draws = 400
    held = 0
    for _ in range(draws):
        scores, problems = draw(rng, n_problems, 2 * n_problems)
        point = set_operating_point(scores, problems, target_recall=target,
                                    confidence=confidence)
        assert point.sufficient
        held += PROBLEMS.cdf(point.threshold) >= target  # the true recall on new claims
    # 3 standard errors of the share over 400 draws below the stated confidence
    assert held / draws >= confidence - 3 * math.sqrt(confidence * (1 - confidence) / draws)


def test_a_threshold_at_the_observed_recall_alone_breaks_the_guarantee() -> None:
    """What the bound is for: the threshold whose recall *on the gold* is the target (no
    bound) gives the target on new claims only about half the time."""
    rng = np.random.default_rng(7)
    held = 0
    for _ in range(300):
        scores, problems = draw(rng, 100, 200)
        naive = np.quantile(scores[problems], 0.9)
        held += PROBLEMS.cdf(naive) >= 0.9
    assert held / 300 < 0.7


def test_with_design_weights_the_guarantee_still_holds_in_seeded_draws() -> None:
    """A stratified review: passed claims (score >= 0.5) sampled at 1 in 4, weight 4."""
    rng = np.random.default_rng(11)
    held = 0
    for _ in range(300):
        scores, problems = draw(rng, 600, 600)
        keep = (scores < 0.5) | (rng.random(len(scores)) < 0.25)
        weights = np.where(scores < 0.5, 1.0, 4.0)[keep]
        point = set_operating_point(scores[keep], problems[keep], weights=weights)
        assert "Korn-Graubard" in point.method
        held += PROBLEMS.cdf(point.threshold) >= 0.9
    assert held / 300 >= 0.9 - 3 * math.sqrt(0.09 / 300)


def test_the_bound_is_the_exact_binomial_one_and_the_threshold_separates_the_gold() -> None:
    rng = np.random.default_rng(3)
    scores, problems = draw(rng, 200, 300)
    point = set_operating_point(scores, problems)
    k = point.gold_misses
    # the largest number of misses whose Clopper-Pearson upper bound stays under 10%
    assert sps.binom.cdf(k, 200, 0.1) <= 0.1 < sps.binom.cdf(k + 1, 200, 0.1)
    assert point.miss_bound == pytest.approx(miss_upper_bound(k, 200, 0.9))
    assert point.miss_bound <= 0.1
    top = np.sort(scores[problems])[::-1]
    assert top[k] < point.threshold <= top[k - 1]  # misses exactly the k highest
    assert recall_at(point.threshold, scores, problems) == pytest.approx(1 - k / 200)
    # the cost figures are measured at that threshold
    assert point.false_alarm.value == pytest.approx(
        float((scores[~problems] < point.threshold).mean()))
    assert point.load.value == pytest.approx(float((scores < point.threshold).mean()))
    assert "recall >= 0.90 with 90% confidence" in point.statement()


def test_always_flagged_claims_are_never_missed_and_need_no_threshold() -> None:
    scores = [-math.inf] * 30 + [0.9] * 10
    problems = [True] * 30 + [False] * 10
    point = set_operating_point(scores, problems)
    assert point.sufficient and point.gold_misses == 0
    assert point.false_alarm.value == 0.0  # the score flags no supported claim
    # of 50 problems one may be missed: the highest finite score, never an always-flagged one
    mixed = set_operating_point([-math.inf] * 48 + [0.8, 0.7], [True] * 50)
    assert mixed.gold_misses == 1 and 0.7 < mixed.threshold <= 0.8


def test_too_little_gold_states_nothing_and_says_how_much_is_needed() -> None:
    assert min_problems(0.9, 0.9) == 22
    point = set_operating_point([0.1] * 21 + [0.9] * 50, [True] * 21 + [False] * 50)
    assert not point.sufficient and math.isnan(point.threshold)
    assert point.load.value == 1.0  # without a threshold everything goes to people
    assert "at least 22 are needed" in point.statement()
    enough = set_operating_point([0.1] * 22 + [0.9] * 50, [True] * 22 + [False] * 50)
    assert enough.sufficient and enough.gold_misses == 0 and 0.1 < enough.threshold < 0.9


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="target recall"):
        set_operating_point([0.1], [True], target_recall=1.0)
    with pytest.raises(ValueError, match="differ in length"):
        set_operating_point([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="below 1"):
        set_operating_point([0.1], [True], weights=[0.5])
