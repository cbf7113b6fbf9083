"""The linear decision rule (score_model): features, decision, config, pipeline, fit."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from calibration.stats import wilson_bounds
from judge.config import JudgeConfig
from judge.linear import FEATURES, ScoreModel, decide_linear, features
from judge.records import AnswerRecord
from judge.runner import run_batch
from judge.store import Store
from judge.verdicts import LABELS, Evidence
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, choice_reply

SRC = "Python 3.11 added the tomllib module to the standard library."
REC = AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "py", "text": SRC}]})
EV = [Evidence(source_id="py", quote=SRC, found=True, start=0, end=len(SRC))]
EVEN = {label: math.log(0.25) for label in LABELS}


def model(weights: dict[str, dict[str, float]] | None = None, **intercept: float) -> ScoreModel:
    return ScoreModel(weights={label: (weights or {}).get(label, {}) for label in LABELS},
                      intercept={label: intercept.get(label, 0.0) for label in LABELS})


def test_features_are_computed_by_the_program() -> None:
    changed = features("Python 3.10 added the tomllib module.", EVEN, EV, REC, 0.5, 0.4)
    assert set(changed) == set(FEATURES)
    assert changed["numbers_missing"] == 1.0 and changed["overlap"] >= 0.4
    assert changed["low_overlap"] == 0.0 and changed["opinion"] == 0.0
    assert math.isclose(sum(math.exp(changed[f"lp_{k}"]) for k in LABELS), 1.0)
    off_topic = features("I love the Eiffel Tower!", EVEN, EV, REC, 0.5, 0.4)
    assert off_topic["opinion"] == 1.0 and off_topic["low_overlap"] == 1.0
    assert off_topic["numbers_missing"] == 0.0


def test_decision_is_the_best_linear_score_and_ties_never_go_to_supported() -> None:
    values = features("Python 3.10 added the tomllib module.", EVEN, EV, REC, 0.5, 0.4)
    rule = model({"contradicted": {"numbers_missing": 2.0}}, supported=1.0)
    label, probs = decide_linear(values, rule)
    assert label == "contradicted" and probs["contradicted"] > probs["supported"]
    assert decide_linear(values, model())[0] == "contradicted"  # all equal: fail closed


def test_score_model_is_validated() -> None:
    with pytest.raises(ValidationError, match="unknown features"):
        model({"supported": {"vibes": 1.0}})
    with pytest.raises(ValidationError, match="needs exactly the labels"):
        ScoreModel(weights={"supported": {}}, intercept={label: 0.0 for label in LABELS})
    with pytest.raises(ValidationError, match="needs strategy 'scores'"):
        JudgeConfig(score_model=model())


def test_pipeline_decides_by_the_rule_and_applies_no_signal_overrides(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda schema, messages: choice_reply("A", confidence=0.7)
    claims = ["Python 3.10 added the tomllib module.", "The Eiffel Tower is in Paris."]
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "p", "sources": [{"id": "py", "text": SRC}], "answer": " ".join(claims),
        "claims": [{"text": c, "citations": ["py"]} for c in claims]}])
    rule = model({"contradicted": {"numbers_missing": 3.0},
                  "not_in_source": {"low_overlap": 3.0}}, supported=1.0)
    config = JudgeConfig(model="fake/judge-model", strategy="scores", signals=True,
                         prompts={"split_claims": "v1", "choose_label": "v1"}, score_model=rule)
    summary = asyncio.run(run_batch(path, store, config))
    rows = {r["claim"]: r for r in store.verdict_rows()}
    changed = rows[claims[0]]
    assert changed["label"] == "contradicted"
    assert changed["subtype"] == "numeric_or_version_error"
    assert "linear rule on scores and evidence" in changed["rationale"]
    assert "numbers missing 1" in changed["rationale"]
    assert "[program:" not in changed["rationale"]  # no signal override on top of the rule
    assert rows[claims[1]]["label"] == "not_in_source"
    # another rule is another judge version, decided from the same stored call
    other = config.model_copy(update={"score_model": model(supported=5.0)})
    again = asyncio.run(run_batch(path, store, other))
    assert again.model_calls == 0 and again.judge_version != summary.judge_version


def _fit_module() -> Any:
    gold = Path(__file__).resolve().parents[1] / "gold"
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
    x, y = fit.matrix(items)
    rule = fit.fit(x, y, 1.0)
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
