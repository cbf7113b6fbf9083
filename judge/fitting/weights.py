"""How much each gold claim weighs in a fit over a pool of datasets.

A pool mixes datasets of very different sizes and label mixes (SummEdits alone holds 1,365
claims from 72 documents), so a fit that weighs every claim alike learns the largest sets'
styles. The schemes:

- ``label``: every claim alike except that each gold label's claims weigh the same in total
  (class-balanced: what every head before the pool was fitted with).
- ``dataset``: each dataset weighs the same in total; within a dataset each of its gold
  classes weighs the same; within a class of a dataset listed in ``per_document``, each
  document (group) weighs the same, so 28 edits of one summary count as one document's worth.
- ``dataset+label``: ``dataset``, then each gold label's total rescaled to the same, so the
  rarer labels (contradicted) are not drowned by the datasets that never use them.

A *class* is the label the person gave: for a dataset whose people judged only supported or
not (SummEdits), the two classes are ``supported`` and ``not_supported``, whatever finer hint
the item carries. Weights are normalised to mean 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

SCHEMES = ("label", "dataset", "dataset+label")


def pool_weights(datasets: Sequence[str], classes: Sequence[str], labels: Sequence[str],
                 groups: Sequence[str], scheme: str = "dataset+label",
                 per_document: Sequence[str] = ()) -> np.ndarray:
    """One weight per claim (mean 1). ``classes``: the label the person gave (the class a
    dataset's claims are balanced over); ``labels``: the label used for the label totals of
    ``dataset+label`` and ``label``; ``groups``: the claim's document or conversation."""
    n = len(datasets)
    if not (len(classes) == len(labels) == len(groups) == n):
        raise ValueError("datasets, classes, labels and groups must be as long")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown weighting {scheme!r}: one of {', '.join(SCHEMES)}")
    if n == 0:
        return np.zeros(0)
    if scheme == "label":
        counts = Counter(labels)
        weight = np.array([1.0 / counts[label] for label in labels])
        return np.asarray(weight / weight.mean(), dtype=np.float64)
    weight = np.zeros(n)
    by_dataset = Counter(datasets)
    for dataset in by_dataset:
        members = [i for i in range(n) if datasets[i] == dataset]
        kinds = Counter(classes[i] for i in members)
        for kind in kinds:
            rows = [i for i in members if classes[i] == kind]
            share = 1.0 / len(by_dataset) / len(kinds)
            if dataset in per_document:
                docs = Counter(groups[i] for i in rows)
                for i in rows:
                    weight[i] = share / len(docs) / docs[groups[i]]
            else:
                weight[rows] = share / len(rows)
    if scheme == "dataset+label":
        totals: dict[str, float] = {}
        for i in range(n):
            totals[labels[i]] = totals.get(labels[i], 0.0) + weight[i]
        weight = np.array([weight[i] / totals[labels[i]] for i in range(n)])
    return np.asarray(weight / weight.mean(), dtype=np.float64)
