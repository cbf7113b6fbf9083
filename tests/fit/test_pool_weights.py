"""The weighting of a pool of gold datasets (judge.fitting.weights) is what its docstring and
docs/probe.md say, on a seeded synthetic pool; a person's label that names a set of labels
(SummEdits: "inconsistent") is fitted as the probability of the set."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from judge.fitting.logistic import fit_standardised
from judge.fitting.weights import pool_weights
from judge.verdicts import LABELS


def synthetic_pool(seed: int = 3) -> tuple[list[str], list[str], list[str], list[str]]:
    rng = np.random.default_rng(seed)
    datasets, classes, labels, groups = [], [], [], []
    plan = {"big": (600, ["supported", "not_in_source"]),
            "small": (40, ["supported", "contradicted", "not_in_source", "not_verifiable"]),
            "edits": (300, ["supported", "not_supported"])}
    for name, (size, kinds) in plan.items():
        for i in range(size):
            kind = kinds[int(rng.integers(len(kinds)))]
            datasets.append(name)
            classes.append(kind)
            labels.append(kind if kind != "not_supported"
                          else ("contradicted" if rng.random() < 0.6 else "not_in_source"))
            # edits: a few documents of very different sizes
            groups.append(f"{name}:{int(rng.integers(5)) ** 2 if name == 'edits' else i}")
    return datasets, classes, labels, groups


def totals(weight: np.ndarray, keys: list[str]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for w, k in zip(weight, keys, strict=True):
        out[k] += float(w)
    return dict(out)


def test_dataset_weighting_gives_each_dataset_class_and_document_its_share() -> None:
    datasets, classes, labels, groups = synthetic_pool()
    w = pool_weights(datasets, classes, labels, groups, "dataset", per_document=["edits"])
    assert w.mean() == pytest.approx(1.0) and (w > 0).all()
    per_dataset = totals(w, datasets)
    assert np.allclose(list(per_dataset.values()), per_dataset["big"])
    for name in per_dataset:
        rows = [i for i, d in enumerate(datasets) if d == name]
        per_class = totals(w[rows], [classes[i] for i in rows])
        assert np.allclose(list(per_class.values()), next(iter(per_class.values())))
    for kind in ("supported", "not_supported"):
        rows = [i for i, (d, c) in enumerate(zip(datasets, classes, strict=True))
                if d == "edits" and c == kind]
        per_doc = totals(w[rows], [groups[i] for i in rows])
        assert len(per_doc) > 1 and np.allclose(list(per_doc.values()),
                                                next(iter(per_doc.values())))
    # without per_document the items of a class weigh alike, whatever their document
    flat = pool_weights(datasets, classes, labels, groups, "dataset")
    rows = [i for i, (d, c) in enumerate(zip(datasets, classes, strict=True))
            if d == "edits" and c == "supported"]
    assert np.allclose(flat[rows], flat[rows[0]])


def test_label_totals_are_equal_under_label_and_dataset_label() -> None:
    datasets, classes, labels, groups = synthetic_pool()
    for scheme in ("label", "dataset+label"):
        w = pool_weights(datasets, classes, labels, groups, scheme, per_document=["edits"])
        per_label = totals(w, labels)
        assert set(per_label) == set(LABELS)
        assert np.allclose(list(per_label.values()), per_label["supported"])
        assert w.mean() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown weighting"):
        pool_weights(datasets, classes, labels, groups, "documents")


def test_a_label_set_is_fitted_as_the_probability_of_the_set() -> None:
    rng = np.random.default_rng(11)
    n = 400
    z = rng.normal(size=(n, 3))
    supported = z[:, 0] > 0
    contradicted = ~supported & (z[:, 1] > 0)
    y = np.where(supported, 0, np.where(contradicted, LABELS.index("contradicted"),
                                        LABELS.index("not_in_source")))
    onehot = np.eye(len(LABELS), dtype=bool)[y]
    # the default (one label) and an explicit one-label mask are the same fit
    assert np.allclose(fit_standardised(z, y, 1.0),
                       fit_standardised(z, y, 1.0, allowed=onehot), atol=1e-6)
    # half the not-supported items only say "not supported": their set is both labels
    allowed = onehot.copy()
    vague = ~supported & (rng.random(n) < 0.5)
    allowed[vague, LABELS.index("contradicted")] = True
    allowed[vague, LABELS.index("not_in_source")] = True
    w = fit_standardised(z, y, 1.0, weight=np.ones(n), allowed=allowed)
    s = np.hstack([z, np.ones((n, 1))]) @ w
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert ((p[:, 0] > 0.5) == supported).mean() > 0.95
    # the exact items still teach contradicted apart from not_in_source
    exact = ~supported & ~vague
    pred = np.where(p[:, LABELS.index("contradicted")] > p[:, LABELS.index("not_in_source")],
                    LABELS.index("contradicted"), LABELS.index("not_in_source"))
    assert (pred[exact] == y[exact]).mean() > 0.9
    with pytest.raises(ValueError, match="at least one allowed label"):
        fit_standardised(z, y, 1.0, allowed=np.zeros_like(onehot))


def test_each_fold_s_head_is_weighed_on_its_own_items_and_keeps_the_label_sets() -> None:
    """fit_probe_rule with a pool's weighting: every out-of-fold head weighs the items it is
    fitted on (never the held fold's), the kept head weighs all; a label set reaches every
    head, so the vague items still teach supported apart from not supported."""
    from judge.fitting.probe import fit_probe_rule

    rng = np.random.default_rng(5)
    n = 240
    x = rng.normal(size=(n, 4))
    supported = x[:, 0] > 0
    y = np.where(supported, 0, np.where(x[:, 1] > 0, LABELS.index("contradicted"),
                                        LABELS.index("not_in_source")))
    allowed = np.eye(len(LABELS), dtype=bool)[y]
    vague = ~supported & (np.arange(n) % 2 == 0)
    allowed[vague, LABELS.index("contradicted")] = True
    allowed[vague, LABELS.index("not_in_source")] = True
    fold = [i % 5 for i in range(n)]
    asked: list[np.ndarray] = []

    def weigh(idx: np.ndarray) -> np.ndarray:
        asked.append(np.asarray(idx))
        return np.ones(len(idx))

    fitted = fit_probe_rule(x, y, fold, lambdas=[1.0], weigh=weigh, allowed=allowed)
    folds = np.asarray(fold)
    held_out = [set(np.flatnonzero(folds == f)) for f in range(5)]
    assert len(asked) == 6  # five folds' heads and the kept one
    for idx in asked[:5]:
        assert any(not (set(idx.tolist()) & held) and len(idx) == n - len(held)
                   for held in held_out)
    assert sorted(asked[5].tolist()) == list(range(n))
    pred, probs = fitted.out_of_fold
    assert ((probs[:, 0] > 0.5) == supported).mean() > 0.9


def test_cross_validated_scores_read_a_label_set_as_people_gave_it() -> None:
    """The L2 strength is chosen, and the folds scored, on what people said: a label set
    (SummEdits' "inconsistent") is one class and either of its labels is right; the
    model-written split inside it is never scored. Without sets, as before."""
    from judge.fitting.logistic import balanced_accuracy, balanced_log_loss

    c, n_s = LABELS.index("contradicted"), LABELS.index("not_in_source")
    y = np.array([0, 0, c, n_s])  # the last two: "inconsistent", split by a model's hint
    allowed = np.eye(len(LABELS), dtype=bool)[y]
    assert balanced_accuracy(np.array([0, c, c, n_s]), y, allowed) == balanced_accuracy(
        np.array([0, c, c, n_s]), y) == pytest.approx(2.5 / 3)
    allowed[2:, [c, n_s]] = True
    pred = np.array([0, 0, n_s, c])  # both against the hint, both inside the set
    assert balanced_accuracy(pred, y) == pytest.approx(1 / 3)  # scored against the hint
    assert balanced_accuracy(pred, y, allowed) == 1.0
    probs = np.zeros((4, len(LABELS)))
    probs[:2, 0] = 1.0
    probs[2:, [c, n_s]] = [[0.1, 0.9], [0.9, 0.1]]  # the set sure, the hint wrong
    assert balanced_log_loss(probs, y, allowed) == pytest.approx(0.0, abs=1e-9)
    assert balanced_log_loss(probs, y) > 1.0
