"""research/fit_probe.py's report: a dataset people labelled supported vs not (SummEdits) is
scored supported vs not; its 4-label split is a model's hint and never scores the judge."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from research.fit_probe import per_dataset, pooled_figures


def items(datasets: list[str]) -> list[Any]:
    return [SimpleNamespace(dataset=ds) for ds in datasets]


def test_binary_only_dataset_is_scored_supported_vs_not() -> None:
    # SummEdits: people said "not supported" for the last two; the hint says contradicted, the
    # head said not_in_source: right in kind (flagged), wrong against the hint
    found = items(["summedits"] * 4)
    y = np.array([0, 0, 1, 1])
    pred = np.array([0, 0, 2, 2])
    shown = per_dataset(found, y, pred, np.array([0.9, 0.8, 0.1, 0.2]), 0.5)["summedits"]
    assert shown["balanced_accuracy"] == 1.0
    assert "recall" not in shown
    assert shown["binary_only"]


def test_four_label_dataset_keeps_its_labels() -> None:
    found = items(["fever"] * 4)
    y = np.array([0, 0, 1, 1])
    pred = np.array([0, 0, 2, 2])
    shown = per_dataset(found, y, pred, np.array([0.9, 0.8, 0.1, 0.2]), 0.5)["fever"]
    assert shown["balanced_accuracy"] == 0.5  # supported right, contradicted all wrong
    assert shown["recall"] == {"supported": 1.0, "contradicted": 0.0}


def test_pooled_four_label_figures_leave_out_the_hints() -> None:
    found = items(["fever", "fever", "summedits", "summedits"])
    y = np.array([0, 1, 0, 1])
    pred = np.array([0, 1, 0, 2])  # the SummEdits miss is only against the hint
    shown = pooled_figures(found, y, pred, np.array([0.9, 0.1, 0.9, 0.1]), 0.5)
    assert shown["balanced_accuracy"] == 1.0
    assert shown["four_label_n"] == 2
    assert shown["binary_balanced_accuracy"] == 1.0
