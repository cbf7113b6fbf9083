"""Seeded synthetic pools for the research scripts' tests: three datasets ``a``, ``b``,
``c`` of alternating supported and contradicted claims, two claims a group."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from judge.verdicts import LABELS
from research.readers_transfer import Pool, label_sets

#: (dataset index, dataset name, supported, rng) -> the claim's vector
Vector = Callable[[int, str, bool, np.random.Generator], np.ndarray]


def synthetic_pool(vector: Vector, n_per: int, seed: int) -> Pool:
    rng = np.random.default_rng(seed)
    datasets, labels, rows, groups = [], [], [], []
    for d, name in enumerate(("a", "b", "c")):
        for k in range(n_per):
            supported = k % 2 == 0
            rows.append(vector(d, name, supported, rng))
            datasets.append(name)
            labels.append("supported" if supported else "contradicted")
            groups.append(f"{name}:{k // 2}")
    classes, allowed = label_sets(datasets, labels)
    return Pool([f"{g}:{k}" for k, g in enumerate(groups)], np.array(datasets), groups,
                np.array([LABELS.index(x) for x in labels]), classes, allowed,
                {"last": np.array(rows)})
