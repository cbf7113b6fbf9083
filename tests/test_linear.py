"""The linear decision rule (score_model): features, decision, config, pipeline, fit."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import math
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from calibration.stats import wilson_bounds
from judge.config import JudgeConfig
from judge.excerpts import locate_sentences
from judge.linear import (
    BASE_FEATURES,
    FEATURES,
    ScoreModel,
    decide_linear,
    features,
)
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
    assert set(changed) == set(BASE_FEATURES)
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
    args = argparse.Namespace(version="llama@abc", gold=Path("gold/tuning_subset.jsonl"),
                              sentence_questions=0, fill_slot=None)
    stored = {"model": "ollama/llama3.1:70b", "abstention_check": False,
              "prompts": {"choose_label": "v1+v2", "check_contradiction": "v1",
                          "split_claims": "v1"}}
    path = tmp_path / "fitted.toml"
    path.write_text(fit.config_toml(rule, 0.45, args, stored), encoding="utf-8")
    loaded = JudgeConfig.load(path)
    assert loaded.model == "ollama/llama3.1:70b"
    assert loaded.prompts == {"split_claims": "v1", "choose_label": "v1+v2"}
    assert loaded.abstention_check is False and loaded.review_support_below == 0.45
    assert loaded.strategy == "scores" and loaded.score_model == rule
    assert tomllib.loads(path.read_text())["judge"]["signals"] is False


TOML_SRC = ("Python 3.11 added the tomllib module to the standard library. "
            "Paris is the capital of France. The tomllib module only reads TOML; it cannot write it.")
TOML_REC = AnswerRecord.model_validate({"answer": "x", "sources": [
    {"id": "a", "text": "Weather today is sunny."}, {"id": "b", "text": TOML_SRC}]})


def test_locate_sentences_takes_the_best_single_sentences_across_sources() -> None:
    found = locate_sentences("The tomllib module can write TOML files.", TOML_REC, 2)
    assert [e.source_id for e in found] == ["b", "b"]
    assert found[0].quote == "The tomllib module only reads TOML; it cannot write it."
    assert found[1].quote.startswith("Python 3.11 added the tomllib module")
    for e in found:  # offsets point at the quote
        assert TOML_SRC[e.start:e.end] == e.quote
    assert len(locate_sentences("The tomllib module can write TOML files.", TOML_REC, 1)) == 1
    assert locate_sentences("Zebras gallop.", TOML_REC, 3) == []  # no shared word: none


def test_sentence_features_are_the_best_answer_over_sentences() -> None:
    claim = "The tomllib module can write TOML files."
    strong = {**EVEN, "contradicted": math.log(0.9)}
    values = features(claim, EVEN, EV, REC, 0.5, 0.4, [EVEN, strong])
    assert set(values) == set(FEATURES)
    # normalised over the options, the best sentence's value
    assert math.isclose(math.exp(values["s_max_contradicted"]), 0.9 / (0.9 + 3 * 0.25))
    assert math.isclose(values["s_max_supported"], values["lp_supported"])
    # asked but no sentence shared a word with the claim: the excerpts' own answer
    none = features(claim, strong, EV, REC, 0.5, 0.4, [])
    assert all(math.isclose(none[f"s_max_{k}"], none[f"lp_{k}"]) for k in LABELS)
    assert set(features(claim, EVEN, EV, REC, 0.5, 0.4)) == set(BASE_FEATURES)


def test_a_rule_on_sentence_answers_needs_the_sentence_questions() -> None:
    rule = model({"contradicted": {"s_max_contradicted": 1.0}})
    assert rule.sentence_features() == ["s_max_contradicted"]
    with pytest.raises(ValidationError, match="needs sentence_questions"):
        JudgeConfig(strategy="scores", score_model=rule)
    JudgeConfig(strategy="scores", score_model=rule, sentence_questions=2)
    with pytest.raises(ValidationError, match="never asks them"):
        JudgeConfig(strategy="per_claim", sentence_questions=2)
    base = JudgeConfig(strategy="scores")
    asked = base.model_copy(update={"sentence_questions": 2})
    assert "sentence_questions" not in base.versioned_fields()  # neutral: old ids unchanged
    assert asked.versioned_fields()["sentence_questions"] == 2


def _sentence_config(rule: ScoreModel) -> JudgeConfig:
    return JudgeConfig(model="fake/judge-model", strategy="scores",
                       prompts={"split_claims": "v1", "choose_label": "v1"},
                       score_model=rule, sentence_questions=2)


def _toml_batch(tmp_path: Path) -> Path:
    claim = "The tomllib module can write TOML files."
    return write_jsonl(tmp_path / "in.jsonl", [{
        "id": "t", "answer": claim, "sources": [{"id": "b", "text": TOML_SRC}],
        "claims": [{"text": claim, "citations": ["b"]}]}])


def test_pipeline_asks_about_each_located_sentence_and_the_rule_weighs_the_answers(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        user = messages[-1]["content"]
        alone = "cannot write" in user and "Paris" not in user  # that sentence, by itself
        return choice_reply("B" if alone else "A", confidence=0.9)

    fake_llm.responder = responder
    # log-probabilities are <= 0: contradicted scores 4 x log P(C) of the best sentence
    rule = model({"contradicted": {"s_max_contradicted": 4.0}},
                 supported=-1.0, not_in_source=-5.0, not_verifiable=-5.0)
    summary = asyncio.run(run_batch(_toml_batch(tmp_path), store, _sentence_config(rule)))
    assert summary.model_calls == 3  # the excerpts, then each of the two best sentences
    row = next(iter(store.verdict_rows()))
    assert row["label"] == "contradicted"
    assert "best single sentence S 0.90 C 0.90" in row["rationale"]  # max per label
    assert len(row["call_ids"]) == 3
    sentence_prompts = [c["messages"][-1]["content"] for c in fake_llm.calls[1:]]
    assert any("cannot write" in p and "Paris" not in p for p in sentence_prompts)
    # without the sentence answer's weight the same stored calls decide supported
    plain = _sentence_config(model(supported=1.0))
    again = asyncio.run(run_batch(_toml_batch(tmp_path), store, plain))
    assert again.model_calls == 0
    labels = {r["judge_version"]: r["label"] for r in store.verdict_rows()}
    assert labels[again.judge_version] == "supported"


def test_a_failed_sentence_question_is_a_judge_error(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        user = messages[-1]["content"]
        if "Paris" not in user:  # a sentence question
            return RuntimeError("model crashed")
        return choice_reply("A")

    fake_llm.responder = responder
    rule = model({"contradicted": {"s_max_contradicted": 4.0}}, supported=1.0)
    config = _sentence_config(rule).model_copy(update={"retries": 0})
    asyncio.run(run_batch(_toml_batch(tmp_path), store, config))
    row = next(iter(store.verdict_rows()))
    assert row["label"] == "judge_error" and row["review"]
    assert "sentence question failed" in row["error"]


def test_text_features_read_the_claim_and_every_source() -> None:
    rec = AnswerRecord.model_validate({"answer": "x", "sources": [
        {"id": "a", "text": "Weather today is sunny."}, {"id": "b", "text": TOML_SRC}]})
    plain = features("The tomllib module reads TOML [b].", EVEN, EV, rec, 0.5, 0.4)
    assert (plain["first_person"], plain["second_person"], plain["question"]) == (0, 0, 0)
    # the best single sentence of any source, not of the excerpts given (EV is source "py")
    assert plain["best_sentence"] == 1.0
    chat = features("I think you would like Paris, wouldn't you?", EVEN, EV, rec, 0.5, 0.4)
    assert (chat["first_person"], chat["second_person"], chat["question"]) == (1, 1, 1)
    assert 0 < chat["best_sentence"] < 1  # "Paris" is in one sentence; the rest is not
    zh = features("我覺得你會喜歡巴黎嗎？", EVEN, EV, rec, 0.5, 0.4)
    assert (zh["first_person"], zh["second_person"], zh["question"]) == (1, 1, 1)
    # words that merely contain the pronouns do not count
    words = features("Usage of iOS mymodule in Ireland.", EVEN, EV, rec, 0.5, 0.4)
    assert words["first_person"] == 0 and words["second_person"] == 0
