"""gold/tune_scores.py: the search fits what it is meant to fit (synthetic items, no model)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

SPEC = importlib.util.spec_from_file_location(
    "tune_scores", Path(__file__).resolve().parents[2] / "research" / "tune_scores.py")
assert SPEC and SPEC.loader
tune = importlib.util.module_from_spec(SPEC)
sys.modules["tune_scores"] = tune  # dataclasses look their module up while it loads
SPEC.loader.exec_module(tune)


def item(k: int, gold: int, probs: list[float]) -> object:
    lp = np.log(np.array(probs))
    identity = {(0.5, 0.0): np.arange(4)}  # one threshold pair whose signals change nothing
    return tune.Item(f"synthetic:g{k}:0", "synthetic", gold, lp, identity)


def test_search_finds_the_bias_that_undoes_a_supported_lean() -> None:
    # the "model" always puts most mass on supported, a little more on the true label
    items = []
    for k in range(40):
        gold = k % 4
        probs = [0.55, 0.15, 0.15, 0.15]
        probs[gold] += 0.1 if gold else 0.0
        probs = [p / sum(probs) for p in probs]
        items.append(item(k, gold, probs))
    gold = np.array([i.gold for i in items])
    raw = tune.predict(items, np.zeros(4), None)
    assert tune.balanced_accuracy(raw, gold) == 0.25   # argmax says supported everywhere
    fit, tried = tune.search(items)
    # signals off and on at one pair, each without and with the deterministic rule
    assert tried == 2 * len(tune.GRID) ** 3 * (1 + len(tune.UNSTATED_GRID))
    assert fit["balanced_accuracy"] == 1.0
    assert all(b > 0 for b in fit["bias"][1:])         # non-supported labels pushed up
    assert fit["signals"] is None                      # identity signals add nothing: off wins
    assert tune.cross_validated(items, folds=5) == 1.0
    # one group's items always share a fold
    assert tune.fold_of("ds:g1:e0", 10) == tune.fold_of("ds:g1:e4", 10)


def test_queue_threshold_reaches_the_recall_asked_for() -> None:
    # gold-supported claims are confident (0.8); the rejected ones, all judged supported
    # too, less so (0.6, or 0.4 for every third): the smallest threshold that catches 90%
    # of them lies just above 0.6, and it sends no supported claim to people
    sure = [item(k, 0, [0.8, 0.05, 0.1, 0.05]) for k in range(10)]
    doubtful = [item(k, 2, [0.6, 0.1, 0.2, 0.1] if k % 3 else [0.45, 0.1, 0.35, 0.1])
                for k in range(10)]
    out = tune.queue_threshold(sure + doubtful, np.zeros(4), None, recall=0.9)
    assert out["review_support_below"] == 0.65
    assert out["queue_recall"] == 1.0 and out["queue_load"] == 0.5


def test_search_fits_the_contradiction_question_when_items_have_its_answers() -> None:
    # the first question never tells contradicted from not_in_source (both lean to
    # not_in_source); the second question's P(yes) does: high for contradicted claims
    items = []
    for k in range(40):
        gold = 1 if k % 2 else 2
        it = item(k, gold, [0.1, 0.3, 0.5, 0.1])
        it.contradiction_yes = 0.8 if gold == 1 else 0.4
        items.append(it)
    gold = np.array([i.gold for i in items])
    assert tune.balanced_accuracy(tune.predict(items, np.zeros(4), None), gold) == 0.5
    fit, tried = tune.search(items)
    assert tried == 2 * len(tune.GRID) ** 3 * (
        1 + len(tune.UNSTATED_GRID) + len(tune.OVERRIDES) * len(tune.YES_GRID))
    kind, labels, above = fit["contradiction"]
    assert kind == "question"
    assert "not_in_source" in labels and 0.4 <= above < 0.8
    assert fit["balanced_accuracy"] == 1.0
    # without answers to the second question, only the deterministic rule is tried; the
    # overlap (the same for both labels here) cannot separate them
    for it in items:
        it.contradiction_yes = None
    assert tune.search(items)[0]["contradiction"] is None


def test_search_fits_the_deterministic_rule_on_overlap() -> None:
    # not_in_source decided everywhere; contradicted claims have evidence on their subject
    items = []
    for k in range(40):
        gold = 1 if k % 2 else 2
        it = item(k, gold, [0.1, 0.2, 0.6, 0.1])
        it.overlap = 0.65 if gold == 1 else 0.2
        items.append(it)
    fit, _ = tune.search(items)
    assert fit["contradiction"] in {("overlap", 0.3), ("overlap", 0.4), ("overlap", 0.5),
                                    ("overlap", 0.6)}
    assert fit["balanced_accuracy"] == 1.0




