"""calibration.weighting: stratified estimates with honest weights (design principle 9)."""

from __future__ import annotations

import json
import math

import pytest

from calibration.stats import wilson_bounds
from calibration.weighting import (
    SamplingDesign,
    sampling_design,
    weighted_rate,
    weighted_shares,
)

# Seed 000: 195 claims. The 64 "pass" claims were sampled (20 labelled, seed 2424); the 131
# flagged claims (fail + needs_human) were all labelled. Labels of the seed: 支持 (supported),
# 部分支持 (partly supported), 不支持 (not supported), 不可解讀 (uninterpretable).
# pass sample: 1 支持 + 19 部分支持; flagged: 12 支持 + 118 部分支持 + 1 不可解讀.
SEED_VALUES = ["支持"] + ["部分支持"] * 19 + ["支持"] * 12 + ["部分支持"] * 118 + ["不可解讀"]
SEED_STRATA = ["pass"] * 20 + ["flagged"] * 131
SEED_WEIGHTS = [3.2] * 20 + [1.0] * 131


def test_seed_design_weight_is_64_over_20():
    design = sampling_design(SEED_STRATA, SEED_WEIGHTS)
    passed = design.stratum("pass")
    assert (passed.size, passed.sample_size) == (64, 20)
    assert passed.weight == pytest.approx(3.2)
    assert passed.status == "sampled"
    assert design.stratum("flagged").weight == 1.0
    assert design.fully_labelled == ["flagged"] and design.sampled == ["pass"]
    assert design.population == 195 and design.not_sampled == []


def test_seed_weighted_shares_reproduce_the_published_figures():
    design = sampling_design(SEED_STRATA, SEED_WEIGHTS)
    shares = weighted_shares(SEED_VALUES, SEED_STRATA, design,
                             categories=["支持", "部分支持", "不支持", "不可解讀"])
    # seed: "加權後支持 15.2 筆（7.8%）、部分支持 178.8 筆（91.7%）、
    #        不支持 0 筆、不可解讀 1 筆（0.5%）"
    # 支持: 3.2 * 1 + 12 = 15.2;  部分支持: 3.2 * 19 + 118 = 178.8
    assert shares["支持"].weighted_count == pytest.approx(15.2)
    assert shares["部分支持"].weighted_count == pytest.approx(178.8)
    assert shares["不支持"].weighted_count == 0
    assert shares["不可解讀"].weighted_count == pytest.approx(1.0)
    assert all(e.weighted_total == pytest.approx(195) for e in shares.values())
    assert round(100 * shares["支持"].value, 1) == 7.8
    assert round(100 * shares["部分支持"].value, 1) == 91.7
    assert round(100 * shares["不可解讀"].value, 1) == 0.5
    assert shares["支持"].n == 151  # labelled items, not weighted


def test_seed_stratified_variance_with_finite_population_correction():
    # share 支持: only the sampled pass stratum has sampling error (flagged: f = 1).
    # W_pass = 64/195, p_pass = 1/20, s^2 = 20/19 * 0.05 * 0.95 = 0.05, f = 20/64
    # V = W^2 (1 - f) s^2 / n = (64/195)^2 * (44/64) * 0.05 / 20 = 1.85146e-4 (SE 0.013607)
    design = sampling_design(SEED_STRATA, SEED_WEIGHTS)
    e = weighted_rate([v == "支持" for v in SEED_VALUES], SEED_STRATA, design)
    variance = (64 / 195) ** 2 * (44 / 64) * 0.05 / 20
    assert math.sqrt(variance) == pytest.approx(0.013607, abs=1e-6)
    n_eff = e.value * (1 - e.value) / variance
    low, high = wilson_bounds(e.value, n_eff)
    assert (e.ci_low, e.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert "effective n" in e.ci_method
    # the 1 不可解讀 claim sits in the fully labelled stratum and none in the pass sample:
    # the variance is 0 and the pass stratum is sampled -> Wilson on the labelled items
    u = weighted_rate([v == "不可解讀" for v in SEED_VALUES], SEED_STRATA, design)
    assert u.ci_high > u.value and "variance estimate is 0" in u.ci_method


def test_census_has_no_sampling_error():
    design = sampling_design(["a", "a", "b"], [1, 1, 1])
    e = weighted_rate([True, False, True], ["a", "a", "b"], design)
    assert e.value == pytest.approx(2 / 3)
    assert e.ci_low == e.ci_high == pytest.approx(2 / 3)
    assert e.ci_method.startswith("census")


def test_weighted_ratio_in_a_domain_by_hand():
    # stratum P: 10 claims, 2 labelled (weight 5); stratum F: 3 claims, all labelled.
    # lenient rate: domain = gold non-supported; hit = judge said supported.
    #   P1 gold N judge S (domain, hit)   P2 gold S judge S (not in domain)
    #   F1 gold C judge C (domain)        F2 gold N judge S (domain, hit)   F3 gold S (out)
    # R = (5 + 1) / (5 + 1 + 1) = 6/7
    # z = x (y - R): P -> [1/7, 0], s^2_P = (1/7)^2 / 2 = 1/98; F has f = 1 (no variance)
    # V = N_P^2 (1 - n_P/N_P) s^2_P / n_P / X^2 = 100 * 0.8 * (1/98) / 2 / 49 = 0.0083299
    strata = ["P", "P", "F", "F", "F"]
    design = sampling_design(strata, [5, 5, 1, 1, 1])
    e = weighted_rate([True, True, False, True, False], strata, design,
                      domain=[True, False, True, True, False])
    assert e.value == pytest.approx(6 / 7)
    assert e.weighted_count == pytest.approx(6) and e.weighted_total == pytest.approx(7)
    assert e.n == 3
    variance = 100 * 0.8 * (1 / 98) / 2 / 49
    assert variance == pytest.approx(0.0083299, abs=1e-7)
    low, high = wilson_bounds(6 / 7, (6 / 7) * (1 / 7) / variance)
    assert (e.ci_low, e.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_unsampled_strata_are_reported_and_excluded():
    design = sampling_design(
        SEED_STRATA, SEED_WEIGHTS, population={"pass": 64, "flagged": 131, "next_step": 17}
    )
    assert design.not_sampled == ["next_step"]
    assert design.population == 195 and design.not_covered == 17
    assert any("next_step" in note and "not represented" in note for note in design.notes)
    assert any("pass 20/64" in note for note in design.notes)
    share = weighted_rate([v == "支持" for v in SEED_VALUES], SEED_STRATA, design)
    assert share.weighted_total == pytest.approx(195)  # next_step not in the denominator
    dumped = json.loads(json.dumps(design.model_dump(), allow_nan=False))
    assert dumped["strata"][-1]["weight"] is None  # nan weight of the unsampled stratum
    assert SamplingDesign.model_validate(dumped).not_sampled == ["next_step"]


def test_population_corrects_a_weight_with_a_note():
    # one of the 20 sampled pass claims was dropped: 19 items still carry weight 3.2
    design = sampling_design(["pass"] * 19, [3.2] * 19, population={"pass": 64})
    assert design.stratum("pass").weight == pytest.approx(64 / 19)
    assert any("using weight 3.368" in note for note in design.notes)


def test_inconsistent_designs_are_rejected():
    with pytest.raises(ValueError, match="different weights"):
        sampling_design(["a", "a"], [2, 3])
    with pytest.raises(ValueError, match="whole"):
        sampling_design(["a"] * 19, [3.2] * 19)  # 60.8 claims
    with pytest.raises(ValueError, match="< 1"):
        sampling_design(["a"], [0.5])
    design = sampling_design(["a", "a"], [2, 2])
    with pytest.raises(ValueError, match="2 labelled items, 1 given"):
        weighted_rate([True], ["a"], design)


def test_single_sampled_item_has_no_variance_estimate():
    design = sampling_design(["p", "f", "f"], [10, 1, 1])
    assert any("one labelled item" in note for note in design.notes)
    e = weighted_rate([True, False, True], ["p", "f", "f"], design)
    assert e.value == pytest.approx(11 / 12)
    assert math.isnan(e.ci_low) and math.isnan(e.ci_high)
