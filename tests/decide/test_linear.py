"""The linear decision rule (score_model): features, decision, config, pipeline, fit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.config.score_model import FEATURES as BASE_FEATURES
from judge.config.score_model import ScoreModel
from judge.decide.linear import decide_linear, features
from judge.records import AnswerRecord
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
    summary = judge_file(path, config=config, db=store).summary
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
    again = judge_file(path, config=other, db=store).summary
    assert again.model_calls == 0 and again.judge_version != summary.judge_version








TOML_SRC = ("Python 3.11 added the tomllib module to the standard library. "
            "Paris is the capital of France. The tomllib module only reads TOML; it cannot write it.")
TOML_REC = AnswerRecord.model_validate({"answer": "x", "sources": [
    {"id": "a", "text": "Weather today is sunny."}, {"id": "b", "text": TOML_SRC}]})
















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
