"""research/fit_linear.py: the fit recovers a rule one feature decides, and writes the config of
the run it fitted on."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibration.stats import wilson_bounds
from judge.config import JudgeConfig
from judge.config.score_model import FEATURES, ScoreModel
from judge.config.score_model import FEATURES as BASE_FEATURES
from judge.verdicts import LABELS


def model(weights: dict[str, dict[str, float]] | None = None, **intercept: float) -> ScoreModel:
    return ScoreModel(weights={label: (weights or {}).get(label, {}) for label in LABELS},
                      intercept={label: intercept.get(label, 0.0) for label in LABELS})


def _fit_module() -> Any:
    gold = Path(__file__).resolve().parents[2] / "research"
    sys.path.insert(0, str(gold))
    spec = importlib.util.spec_from_file_location("fit_linear", gold / "fit_linear.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["fit_linear"] = module
    spec.loader.exec_module(module)
    return module


def test_fit_recovers_a_rule_that_one_feature_decides() -> None:
    fit = _fit_module()
    rng = np.random.default_rng(0)
    items = []
    for k in range(80):
        gold = k % 4
        values = {name: float(rng.normal(0, 0.1)) for name in FEATURES}
        values["overlap"] = [0.9, 0.6, 0.3, 0.0][gold] + float(rng.normal(0, 0.03))
        items.append(fit.Item(f"synthetic:g{k}:0", "synthetic", gold, np.zeros(4), {},
                              features=values))
    x, y = fit.matrix(items, BASE_FEATURES)
    rule = fit.fit(x, y, 1.0, BASE_FEATURES)
    pred, probs = fit.predict(items, rule)
    p_s = probs[:, 0]
    assert fit.balanced_log_loss(probs, y) < math.log(4)  # better than knowing nothing
    assert fit.balanced_accuracy(pred, y) >= 0.9
    assert rule.weights["supported"]["overlap"] > rule.weights["not_verifiable"]["overlap"]
    assert p_s[y == 0].mean() > p_s[y != 0].mean()
    # the queue threshold must reach the recall target with 95% confidence, not just reach it
    q = fit.queue_threshold(pred, p_s, y, 0.9)
    caught = ((pred != 0) | (p_s < q["review_support_below"]))[y != 0].mean()
    assert caught == pytest.approx(q["queue_recall"], abs=1e-3)
    assert wilson_bounds(float(caught), int((y != 0).sum()))[0] >= 0.9


def test_fitted_config_keeps_the_model_and_prompts_it_was_fitted_on(tmp_path: Path) -> None:
    """A rule fitted on another model's stored answers must name that model and its prompt
    versions, never the embedded default's: the weights only fit the answers they read."""
    fit = _fit_module()
    rule = model({"supported": {"overlap": 2.0}})
    args = argparse.Namespace(version="llama@abc", gold=Path("research/tuning_subset.jsonl"))
    stored = {"model": "ollama/llama3.1:70b", "abstention_check": False,
              "prompts": {"choose_label": "v2", "split_claims": "v1"}}
    path = tmp_path / "fitted.toml"
    path.write_text(fit.config_toml(rule, 0.45, args, stored), encoding="utf-8")
    loaded = JudgeConfig.load(path)
    assert loaded.model == "ollama/llama3.1:70b"
    assert loaded.prompts == {"split_claims": "v1", "choose_label": "v2"}
    assert loaded.abstention_check is False and loaded.review_support_below == 0.45
    assert loaded.strategy == "scores" and loaded.score_model == rule
    assert tomllib.loads(path.read_text())["judge"]["signals"] is False
