"""research/readers_transfer.py on a seeded synthetic pool: leave-one-dataset-out reads each
dataset with a head that never saw it, and the learning curve's pools are prefixes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from judge.decide.probe_head import ProbeHead
from judge.verdicts import LABELS
from research.readers_transfer import Pool, evaluate, read_head
from tests.research.pools import synthetic_pool


def synthetic(n_per: int = 60, seed: int = 0, leak: str | None = None) -> Pool:
    """Three datasets; the label is written in the first coordinate for every dataset but
    ``leak``, whose label is only in its own coordinate (so a head that never saw it cannot
    read it)."""
    def vector(d: int, name: str, supported: bool, rng: np.random.Generator) -> np.ndarray:
        v = rng.normal(size=8)
        v[1 + d if name == leak else 0] += 2.0 if supported else -2.0
        return v

    return synthetic_pool(vector, n_per, seed)


def test_leave_one_dataset_out_never_sees_the_dataset_it_reads() -> None:
    shared = evaluate(synthetic(), "last", "dataset+label", 1.0)
    assert all(v["binary_ba"][0] > 0.85 for v in shared["lodo"].values())
    hidden = evaluate(synthetic(leak="c"), "last", "dataset+label", 1.0)
    # c's signal is in a coordinate a and b never use: read out of dataset it is near chance,
    # within the folds (c's other claims seen) it is read
    assert hidden["lodo"]["c"]["binary_ba"][0] < 0.7
    assert hidden["folds"]["c"]["binary_ba"][0] > 0.75
    assert hidden["lodo"]["a"]["binary_ba"][0] > 0.85


def test_the_learning_curve_pools_are_prefixes() -> None:
    pool = synthetic()
    part = pool.first(50)
    assert part.ids == pool.ids[:50]
    assert np.array_equal(part.x("last"), pool.x("last")[:50])
    assert np.array_equal(part.allowed, pool.allowed[:50])
    assert list(part.datasets) == list(pool.datasets[:50])


def test_a_fitted_head_is_read_on_each_dataset_as_it_was_fitted(tmp_path: Path) -> None:
    coef = np.zeros((len(LABELS), 8))
    coef[LABELS.index("supported"), 0] = 3.0
    coef[LABELS.index("contradicted"), 0] = -3.0
    path = tmp_path / "head.json"
    path.write_text(ProbeHead(tuple(LABELS), np.zeros(8), np.ones(8), coef,
                              np.zeros(len(LABELS)), {}).dumps(), encoding="utf-8")
    read = read_head(synthetic(leak="c"), path, {})
    # the head reads coordinate 0: a and b carry their label there, c does not
    assert read["a"]["binary_ba"][0] > 0.85 and read["b"]["binary_ba"][0] > 0.85
    assert read["c"]["binary_ba"][0] < 0.7
    assert read["a"]["n"] == 60


def test_paired_lodo_is_zero_for_the_same_head_and_positive_for_a_better_one() -> None:
    from research.readers_transfer import SUPPORTED, lodo_probs, paired_lodo

    pool = synthetic(seed=3)
    base = lodo_probs(pool, pool.x("last"), "label", 10.0)
    same = paired_lodo(pool, base, base.copy(), draws=50)
    assert same["binary_ba"] == [0.0, 0.0, 0.0] and same["auc"] == [0.0, 0.0, 0.0]
    # a head that knows every label: higher on both figures, the interval above zero
    oracle = np.full_like(base, 0.01)
    oracle[np.arange(len(pool.ids)), pool.y] = 0.97
    noisy = base.copy()
    rng = np.random.default_rng(0)
    noisy[:, SUPPORTED] = rng.random(len(pool.ids))  # P(supported) made noise: worse
    better = paired_lodo(pool, noisy, oracle, draws=50)
    assert better["binary_ba"][1] > 0 and better["auc"][1] > 0
    worse = paired_lodo(pool, oracle, noisy, draws=50)
    assert worse["binary_ba"][2] < 0 and worse["auc"][2] < 0
