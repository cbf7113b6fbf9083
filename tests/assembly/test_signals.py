from __future__ import annotations

import numpy as np

from judge.assembly.signals import apply_signals
from judge.config import DEFAULT_MODEL, EMBEDDED_PROFILE, JudgeConfig
from judge.records import AnswerRecord
from judge.verdicts import Evidence

SRC = "Python 3.11 added the tomllib module to the standard library."
REC = AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "py", "text": SRC}]})
EV = [Evidence(source_id="py", quote=SRC, found=True, start=0, end=len(SRC))]
CFG = JudgeConfig(signals=True)


def test_low_overlap_supported_becomes_not_in_source() -> None:
    label, note = apply_signals("The Eiffel Tower is in Paris.", "supported", EV, REC, CFG)
    assert label == "not_in_source" and note and "the model said supported" in note


def test_changed_version_over_covering_evidence_becomes_contradicted() -> None:
    label, note = apply_signals("Python 3.10 added the tomllib module.", "supported", EV, REC, CFG)
    assert label == "contradicted" and note and "3.10" in note


def test_opinion_with_little_overlap_becomes_not_verifiable() -> None:
    label, _ = apply_signals("I love that movie, it is so fun!", "supported", EV, REC, CFG)
    assert label == "not_verifiable"


def test_a_well_covered_supported_claim_is_left_alone() -> None:
    claim = "Python 3.11 added the tomllib module to the standard library."
    assert apply_signals(claim, "supported", EV, REC, CFG) == ("supported", None)


def test_embedded_profile_applies_only_without_an_explicit_strategy_or_other_model() -> None:
    assert JudgeConfig.load().strategy == EMBEDDED_PROFILE["strategy"]
    assert JudgeConfig.load().model == DEFAULT_MODEL and JudgeConfig.load().probe_head
    assert JudgeConfig.load(model="openai/gpt-4.1").strategy == "batch"
    assert JudgeConfig.load(strategy="batch").signals is False


def test_contradiction_needs_evidence_about_the_same_subject() -> None:
    cfg = CFG.model_copy(update={"contradiction_overlap_min": 0.3})
    off_topic = "The Eiffel Tower opened in 1889."
    label, note = apply_signals(off_topic, "contradicted", EV, REC, cfg)
    assert label == "not_in_source" and note and "cannot contradict" in note
    # on-topic contradictions stay, and the rule is off unless configured
    on_topic = "Python 3.11 removed the tomllib module from the standard library."
    assert apply_signals(on_topic, "contradicted", EV, REC, cfg) == ("contradicted", None)
    assert apply_signals(off_topic, "contradicted", EV, REC, CFG)[0] == "contradicted"




def test_embedded_profile_is_the_config_the_reports_name() -> None:
    from pathlib import Path

    from judge.decide.probe import head_of

    configs = Path(__file__).resolve().parents[2] / "research" / "configs"
    assert JudgeConfig.load() == JudgeConfig.load(configs / "probe_v8.toml")
    config = JudgeConfig.load()
    assert config.strategy == "probe" and config.probe_head is not None
    assert config.probe_head.file.startswith("builtin:")
    head = head_of(config)  # shipped in the package, with its pinned sha256
    assert head.dim == 1536 and head.about["prompt"] == "probe_claim/v2"
    assert head.about["layers"] == config.probe_layers == 21
    assert head.about["excerpt_chars"] == config.probe_excerpt_chars == 1500
    # fitted on every dev claim, with its review queue's points set out of fold
    assert head.about["n"] == 1650 and head.about["fitted_on"]["gold"] == [
        "gold/eval_all.jsonl", "research/tuning_subset.jsonl"]
    from judge.review.triage import packaged_points

    packaged = packaged_points(config.probe_head.sha256)
    assert packaged is not None and packaged["gold"]["matched"] == 1650
    assert {p["score"]["kind"] for p in packaged["points"]} == {"stacked-v1"}
    # head v6 keeps head v5's Chinese language offset; v5 (v4 with it, v4's points carried
    # over) stays loadable under its reports' name
    v5 = JudgeConfig.load(configs / "probe_v5_sentences.toml")
    assert v5.probe_excerpt_chars == 500 and v5.probe_head is not None
    assert head.shift is not None and set(head.shift.offsets) == {"zh"}
    assert np.array_equal(head.shift.offsets["zh"], head_of(v5).shift.offsets["zh"])
    v4 = JudgeConfig.load(configs / "probe_first21_context_all.toml")
    assert v4.probe_head is not None and head_of(v4).shift is None
    # head v8 is v6 with head v7 (fitted on the training pool) for claims read as Chinese,
    # which keeps the same offset
    v6, v7 = (head_of(JudgeConfig.load(configs / f"probe_v{n}.toml")) for n in (6, 7))
    assert head.dumps() != v6.dumps() and head.languages is not None
    assert set(head.languages.heads) == {"zh"} and head.languages.rule == "han-share-half/v1"
    assert head.languages.heads["zh"].dumps() == v7.dumps()
    assert head.decider("Python 3.11 added tomllib.").dumps() != v7.dumps()
    assert np.array_equal(head.decider("Python 3.11 added tomllib.").coef, v6.coef)
    assert v7.shift is not None
    assert np.array_equal(v7.shift.offsets["zh"], head.shift.offsets["zh"])
    assert all(np.array_equal(a, b) for a, b in zip(
        (head_of(v5).mean, head_of(v5).coef), (head_of(v4).mean, head_of(v4).coef),
        strict=True))
    old = packaged_points(v4.probe_head.sha256)
    assert old is not None and old["points"] == packaged_points(v5.probe_head.sha256)["points"]
    # the head fitted on the tuning split alone stays loadable under its reports' name
    assert head_of(JudgeConfig.load(configs / "probe_first21_context.toml")).about["n"] == 865
    # the scores profile it replaced stays loadable under the name the reports use
    scores = JudgeConfig.load(configs / "scores_v1_linear_t244_text.toml")
    assert scores.strategy == "scores" and scores.score_model is not None

