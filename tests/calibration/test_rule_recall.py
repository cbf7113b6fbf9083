"""What a fixed flag rule catches of the gold problems (a label judge's queue): the recall with
its one-sided lower confidence bound, never a tunable point."""

from __future__ import annotations

import pytest
import scipy.stats as sps

from calibration.operating_point import rule_recall


def test_the_bound_is_the_one_sided_clopper_pearson_lower_bound() -> None:
    flagged = [True] * 18 + [False] * 2 + [True] * 5 + [False] * 15
    problems = [True] * 20 + [False] * 20
    r = rule_recall(flagged, problems, confidence=0.9)
    assert (r.n, r.n_problems, r.caught) == (40, 20, 18)
    assert r.recall.value == pytest.approx(0.9)
    assert r.recall_bound == pytest.approx(sps.beta.ppf(0.1, 18, 3))
    assert r.load.value == pytest.approx(23 / 40)
    assert "flags 18 of 20 gold problem claims" in r.statement()
    assert "not a tunable point" in r.statement()
    assert rule_recall(flagged, problems, confidence=0.95).recall_bound < r.recall_bound


def test_nothing_caught_bounds_at_zero_and_no_problem_states_no_recall() -> None:
    assert rule_recall([False, False], [True, True]).recall_bound == 0.0
    none = rule_recall([True, False], [False, False])
    assert none.n_problems == 0 and "no recall can be stated" in none.statement()


def test_design_weights_read_through_the_effective_size() -> None:
    flagged, problems = [True, True, False, True], [True, True, True, False]
    plain = rule_recall(flagged, problems)
    weighted = rule_recall(flagged, problems, weights=[1.0, 1.0, 4.0, 1.0])
    assert weighted.recall.value == pytest.approx(2 / 6)  # the missed claim weighs 4
    assert weighted.recall.value < plain.recall.value
    assert "effective size" in weighted.method
