"""calibration.stats against hand-computed values on small tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.labels import JUDGE_ERROR, JUDGE_LABELS, LABELS
from calibration.stats import accuracy as accuracy_of
from calibration.stats import (
    balanced_accuracy,
    balanced_accuracy_from_tables,
    bowker,
    clopper_pearson_interval,
    cohen_kappa,
    confusion_matrix,
    kappa_from_table,
    krippendorff_alpha,
    mcnemar,
    paired_difference,
    per_label_metrics,
    stuart_maxwell,
    wilson_bounds,
    wilson_interval,
)

S, C, N, V = LABELS

# A 3×3 paired table used by several tests (rows: rater/version A, columns: B).
T3 = np.array([[20, 5, 3], [2, 15, 4], [1, 6, 10]])


def test_labels_match_the_judge_vocabulary():
    from judge import verdicts
    assert verdicts.LABELS == LABELS
    assert verdicts.JUDGE_ERROR == JUDGE_ERROR


# --------------------------------------------------------------------------- kappa


def test_kappa_2x2_by_hand():
    # n = 50, observed agreement po = (20 + 15) / 50 = 0.7
    # rater A "yes" 25/50 = 0.5, rater B "yes" 30/50 = 0.6
    # pe = 0.5 * 0.6 + 0.5 * 0.4 = 0.5;  kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert kappa_from_table(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4)


def test_kappa_3x3_by_hand():
    # n = 66, diagonal 20 + 15 + 10 = 45
    # row sums 28, 21, 17; column sums 23, 26, 17
    # sum(row * col) = 28*23 + 21*26 + 17*17 = 644 + 546 + 289 = 1479
    # kappa = (n * diag - sum) / (n^2 - sum) = (2970 - 1479) / (4356 - 1479) = 1491 / 2877
    assert kappa_from_table(T3) == pytest.approx(1491 / 2877)  # 0.51825
    assert kappa_from_table(T3) == pytest.approx(0.518248, abs=1e-6)


def test_cohen_kappa_from_labels_matches_the_table_and_has_a_seeded_ci():
    # expand the 2×2 table [[20, 5], [10, 15]] into 50 label pairs
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    k = cohen_kappa(a, b, seed=7)
    assert k.value == pytest.approx(0.4)
    assert k.n == 50
    assert k.ci_low < 0.4 < k.ci_high
    assert k.ci_low >= -1 and k.ci_high <= 1
    again = cohen_kappa(a, b, seed=7)
    assert (again.ci_low, again.ci_high) == (k.ci_low, k.ci_high)
    other = cohen_kappa(a, b, seed=8)
    assert (other.ci_low, other.ci_high) != (k.ci_low, k.ci_high)


def test_kappa_counts_judge_error_as_its_own_category():
    gold = [S, S, C, C]
    judged = [S, JUDGE_ERROR, C, C]
    # categories S, judge_error, C; n = 4; diag = 3
    # gold marginals S 2, E 0, C 2; judge marginals S 1, E 1, C 2
    # sum = 2*1 + 0*1 + 2*2 = 6; kappa = (4*3 - 6) / (16 - 6) = 0.6
    assert cohen_kappa(gold, judged, n_resamples=0).value == pytest.approx(0.6)


def test_kappa_degenerate_cases_give_nan_not_a_crash():
    one_label = cohen_kappa([S] * 8, [S] * 8)
    assert math.isnan(one_label.value)
    assert math.isnan(one_label.ci_low) and math.isnan(one_label.ci_high)
    assert one_label.n == 8
    empty = cohen_kappa([], [])
    assert math.isnan(empty.value) and empty.n == 0
    # each side constant but different: po = 0, pe = 0 -> kappa = 0 (defined)
    assert cohen_kappa([S] * 5, [C] * 5).value == 0.0
    # too few items for a bootstrap: the value is kept, the interval is nan
    single = cohen_kappa([S], [C])
    assert single.value == 0.0 and math.isnan(single.ci_low)


def test_kappa_ci_is_nan_when_mostly_undefined_in_resamples():
    # 9 agreements on S and one S/C disagreement: pe = 1 * 0.9 = 0.9 = po -> kappa 0, but a
    # resample without the disagreement (0.9^10 = 35% of them) has an undefined kappa
    k = cohen_kappa([S] * 10, [S] * 9 + [C])
    assert k.value == pytest.approx(0.0)
    assert math.isnan(k.ci_low) and math.isnan(k.ci_high)


# --------------------------------------------------------------------------- accuracy


def test_confusion_matrix_counts_and_rejects_unknown_labels():
    table = confusion_matrix([S, S, C], [S, JUDGE_ERROR, S])
    assert table.shape == (4, 5)
    assert table[0, 0] == 1 and table[0, JUDGE_LABELS.index(JUDGE_ERROR)] == 1
    assert table[1, 0] == 1 and table.sum() == 3
    with pytest.raises(ValueError, match="'supportd'"):
        confusion_matrix([S, "supportd"], [S, S])
    with pytest.raises(ValueError, match="judge_error"):
        confusion_matrix([JUDGE_ERROR], [S])  # gold can never be a judge error
    with pytest.raises(ValueError, match="length"):
        confusion_matrix([S, S], [S])


def test_accuracy_and_balanced_accuracy_by_hand():
    gold = [S, S, S, S, C, C, N]
    judged = [S, S, S, C, C, JUDGE_ERROR, N]
    # accuracy: 5 of 7 correct (the judge error counts as wrong)
    acc = accuracy_of(gold, judged)
    assert acc.value == pytest.approx(5 / 7) and acc.n == 7
    # recalls: supported 3/4, contradicted 1/2, not_in_source 1/1; not_verifiable has no
    # gold item and is left out (not counted as 0): (0.75 + 0.5 + 1) / 3 = 0.75
    ba = balanced_accuracy(gold, judged, seed=3)
    assert ba.value == pytest.approx(0.75)
    assert ba.ci_low <= 0.75 <= ba.ci_high


def test_balanced_accuracy_on_a_stack_of_tables():
    tables = np.array([
        [[3, 1, 0], [0, 2, 0]],  # recalls 3/4 and 1 -> 0.875
        [[0, 0, 0], [1, 1, 0]],  # first row empty: only 1/2 -> 0.5
    ])
    assert balanced_accuracy_from_tables(tables) == pytest.approx([0.875, 0.5])


def test_per_label_metrics_by_hand():
    gold = [S, S, S, S, C, C, N]
    judged = [S, S, S, C, C, JUDGE_ERROR, N]
    m = per_label_metrics(gold, judged)
    # contradicted: judge said C twice (gold S, gold C): precision 1/2; gold C twice,
    # one found: recall 1/2; F1 = 2 * 0.5 * 0.5 / 1 = 0.5
    c = m[C]
    assert (c.support, c.predicted, c.true_positives) == (2, 2, 1)
    assert c.precision.value == pytest.approx(0.5) and c.recall.value == pytest.approx(0.5)
    assert c.f1 == pytest.approx(0.5)
    # supported: precision 3/3, recall 3/4, F1 = 2 * 1 * 0.75 / 1.75 = 6/7
    assert m[S].f1 == pytest.approx(6 / 7)
    # not_verifiable: never in gold, never predicted: undefined, not 0
    v = m[V]
    assert v.support == 0 and math.isnan(v.precision.value) and math.isnan(v.f1)


# --------------------------------------------------------------------------- proportions


def test_wilson_interval_8_of_10_by_hand():
    # p = 0.8, n = 10, z = 1.959964, z^2 = 3.841459
    # centre = (p + z^2 / 2n) / (1 + z^2 / n) = 0.992073 / 1.384146 = 0.716740
    # half = z * sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 1.959964 * 0.160011 / 1.384146
    #      = 0.226576  ->  (0.490163, 0.943316)
    w = wilson_interval(8, 10)
    assert w.value == 0.8 and w.n == 10
    assert w.ci_low == pytest.approx(0.4902, abs=5e-5)
    assert w.ci_high == pytest.approx(0.9433, abs=5e-5)


def test_wilson_zero_successes_and_empty():
    # 0/10: lower 0, upper z^2 / (n + z^2) = 3.841459 / 13.841459 = 0.277533
    w = wilson_interval(0, 10)
    assert w.ci_low == 0.0 and w.ci_high == pytest.approx(0.277533, abs=1e-6)
    empty = wilson_interval(0, 0)
    assert math.isnan(empty.value) and math.isnan(empty.ci_high) and empty.n == 0
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    assert wilson_bounds(0.3, math.inf) == (0.3, 0.3)


def test_clopper_pearson_8_of_10():
    # exact interval: Beta(0.025; 8, 3) = 0.4439, Beta(0.975; 9, 2) = 0.9748 (tabulated)
    cp = clopper_pearson_interval(8, 10)
    assert cp.ci_low == pytest.approx(0.4439, abs=5e-5)
    assert cp.ci_high == pytest.approx(0.9748, abs=5e-5)
    # exact is wider than Wilson here
    assert cp.ci_low < wilson_interval(8, 10).ci_low


def test_paired_difference_newcombe_by_hand_phi_zero():
    # Paired table both=1, only_a=1, only_b=7, neither=12, n=21:
    # p_a = 2/21, p_b = 8/21, d = p_b - p_a = 6/21 = 0.285714
    # A = 1*12 - 1*7 = 5 <= n/2 = 10.5 -> phi = 0, so the interval is "square and add":
    # low = d - sqrt((p_b - l_b)^2 + (u_a - p_a)^2), high = d + sqrt((u_b - p_b)^2 + (p_a - l_a)^2)
    e = paired_difference(1, 1, 7, 12)
    la, ua = wilson_bounds(2 / 21, 21)
    lb, ub = wilson_bounds(8 / 21, 21)
    assert e.value == pytest.approx(6 / 21)
    assert e.ci_low == pytest.approx(6 / 21 - math.hypot(8 / 21 - lb, ua - 2 / 21))
    assert e.ci_high == pytest.approx(6 / 21 + math.hypot(ub - 8 / 21, 2 / 21 - la))
    assert e.ci_low == pytest.approx(0.02556, abs=1e-4)
    assert e.ci_high == pytest.approx(0.50692, abs=1e-4)


def test_paired_difference_with_positive_correlation_is_narrower():
    # both=59, only_a=6, only_b=16, neither=80, n=161: A = 59*80 - 6*16 = 4624 > n/2, so
    # phi = (4624 - 80.5) / sqrt(65 * 96 * 75 * 86) = 0.7147 and the paired interval is much
    # narrower than the one that ignores the pairing (phi = 0)
    e = paired_difference(59, 6, 16, 80)
    assert e.value == pytest.approx(10 / 161)
    pa, pb = 65 / 161, 75 / 161
    la, ua = wilson_bounds(pa, 161)
    lb, ub = wilson_bounds(pb, 161)
    phi = (4624 - 80.5) / math.sqrt(65 * 96 * 75 * 86)
    low = 10 / 161 - math.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
    assert e.ci_low == pytest.approx(low)
    assert e.ci_low > 0  # the increase is significant once the pairing is used
    assert e.ci_low > 10 / 161 - math.hypot(pb - lb, ua - pa)
    assert math.isnan(paired_difference(0, 0, 0, 0).value)


# --------------------------------------------------------------------------- tests


def test_mcnemar_exact_by_hand():
    # b = 3, c = 10, m = 13 < 25 -> exact: p = 2 * P(X <= 3), X ~ Bin(13, 1/2)
    # = 2 * (1 + 13 + 78 + 286) / 8192 = 756 / 8192 = 0.0922852
    r = mcnemar(3, 10)
    assert r.method.startswith("exact")
    assert r.p_value == pytest.approx(756 / 8192)
    assert r.statistic == 3


def test_mcnemar_chi_square_by_hand():
    # b = 30, c = 10, m = 40 >= 25 -> chi2 = (|30 - 10| - 1)^2 / 40 = 361 / 40 = 9.025
    # on 1 df: p = erfc(sqrt(9.025 / 2)) = 0.0026631
    r = mcnemar(30, 10)
    assert "continuity" in r.method and r.df == 1
    assert r.statistic == pytest.approx(9.025)
    assert r.p_value == pytest.approx(math.erfc(math.sqrt(9.025 / 2)))
    assert r.p_value == pytest.approx(0.0026631, abs=1e-6)
    # forcing the exact test on the same counts gives a different, exact p
    assert mcnemar(30, 10, exact=True).p_value != pytest.approx(r.p_value)


def test_mcnemar_without_discordant_items():
    assert mcnemar(0, 0).p_value == 1.0
    assert math.isnan(mcnemar(0, 0, exact=False).p_value)


def test_stuart_maxwell_3x3_by_hand():
    # T3 row sums 28, 21, 17; column sums 23, 26, 17 -> d = (5, -5, 0)
    # S11 = 28 + 23 - 2*20 = 11, S22 = 21 + 26 - 2*15 = 17, S12 = -(5 + 2) = -7
    # drop category 3: S = [[11, -7], [-7, 17]], det = 187 - 49 = 138,
    # S^-1 = [[17, 7], [7, 11]] / 138
    # chi2 = (25*17 + 2*5*(-5)*7 + 25*11) / 138 = (425 - 350 + 275) / 138 = 350 / 138
    # df = 2, so p = exp(-chi2 / 2) = exp(-1.268116) = 0.281361
    r = stuart_maxwell(T3)
    assert r.statistic == pytest.approx(350 / 138)
    assert r.df == 2
    assert r.p_value == pytest.approx(math.exp(-350 / 276))
    assert r.p_value == pytest.approx(0.281361, abs=1e-6)


def test_stuart_maxwell_handles_unused_categories_and_reduces_to_mcnemar():
    # an unused 4th category adds a zero row/column: same statistic and df
    padded = np.zeros((4, 4), dtype=int)
    padded[:3, :3] = T3
    r = stuart_maxwell(padded)
    assert r.statistic == pytest.approx(350 / 138) and r.df == 2
    # only categories 1 and 2 ever change (3 one way, 1 the other); category 3 is stable:
    # the covariance has rank 1 and the statistic is McNemar's uncorrected
    # (b - c)^2 / (b + c) = (3 - 1)^2 / 4 = 1 on 1 df
    r = stuart_maxwell(np.array([[5, 3, 0], [1, 5, 0], [0, 0, 5]]))
    assert r.statistic == pytest.approx(1.0) and r.df == 1
    assert r.note and "rank 1" in r.note
    # no change at all: identical marginals, p = 1
    assert stuart_maxwell(np.diag([3, 4, 5])).p_value == 1.0
    with pytest.raises(ValueError):
        stuart_maxwell(np.ones((2, 3)))


def test_bowker_by_hand():
    # pairs (1,2): (5-2)^2/7 = 9/7; (1,3): (3-1)^2/4 = 1; (2,3): (4-6)^2/10 = 0.4
    # chi2 = 9/7 + 1.4 = 2.685714 on 3 df
    # chi2 sf on 3 df: erfc(sqrt(x/2)) + sqrt(2x/pi) * exp(-x/2) = 0.442660
    r = bowker(T3)
    x = 9 / 7 + 1.4
    assert r.statistic == pytest.approx(x) and r.df == 3
    expected = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
    assert r.p_value == pytest.approx(expected)
    assert r.p_value == pytest.approx(0.44266, abs=1e-5)
    # a pair never observed off the diagonal carries no df
    assert bowker(np.array([[5, 3, 0], [1, 5, 0], [0, 0, 5]])).df == 1


# --------------------------------------------------------------------------- Krippendorff


def test_krippendorff_alpha_two_coders_binary_by_hand():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", binary example.
    # 10 units; 5 units (0,0), 1 unit (1,1), 4 units disagree.
    # coincidences: o00 = 10, o11 = 2, o01 = o10 = 4; n = 20, n0 = 14, n1 = 6
    # alpha = 1 - (n - 1) * o01 / (n0 * n1) = 1 - 19 * 4 / 84 = 0.095238
    ben = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    gerry = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    a = krippendorff_alpha(list(zip(ben, gerry, strict=True)))
    assert a.value == pytest.approx(1 - 76 / 84)
    assert a.n == 10


def test_krippendorff_alpha_textbook_four_coders_with_missing_values():
    # Krippendorff (2011), nominal example: 4 coders, 12 units, missing values; alpha = 0.743
    # (unit 12 has a single value and is not pairable, so 11 units count)
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = list(zip(*coders, strict=True))
    a = krippendorff_alpha(units, seed=1)
    assert a.value == pytest.approx(0.743, abs=5e-4)
    assert a.n == 11
    assert a.ci_low < a.value <= a.ci_high <= 1


def test_krippendorff_alpha_undefined_cases():
    assert math.isnan(krippendorff_alpha([[S, S], [S, S, None]]).value)  # one category
    assert krippendorff_alpha([[S], [None, C]]).n == 0  # nothing pairable
    # perfect agreement with two categories
    assert krippendorff_alpha([[S, S], [C, C, C]]).value == pytest.approx(1.0)


def test_roc_auc_counts_ties_as_half_with_the_hanley_mcneil_interval():
    from calibration.stats import roc_auc

    # pairs: (3>1, 3>2, 2=2 tie, 2>1) over 2 positives x 2 negatives -> 3.5 / 4
    auc = roc_auc([3.0, 2.0], [1.0, 2.0])
    assert auc.value == pytest.approx(0.875) and auc.n == 4
    assert 0.0 <= auc.ci_low < auc.value < auc.ci_high <= 1.0
    a = 0.875
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt((a * (1 - a) + (q1 - a * a) + (q2 - a * a)) / 4)
    assert auc.ci_high == pytest.approx(min(1.0, a + 1.959964 * se), abs=1e-5)
    assert roc_auc([1.0], [2.0]).value == 0.0
    assert math.isnan(roc_auc([], [1.0]).value)
