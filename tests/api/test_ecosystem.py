"""The habits of the tools users know: results as a pandas DataFrame (``to_pandas()``, as
RAGAS gives) and a CI gate (``judge.testing``, as DeepEval's ``assert_test``), run on the
scripted fake judge (a claim found verbatim in its source is supported, else not_in_source)."""

from __future__ import annotations

from pathlib import Path

import pytest

import judge
import judge.testing as jt
from judge.config import JudgeConfig
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM

ROOT = Path(__file__).resolve().parents[2]
S1 = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}
RECORDS = [
    {"id": "ok", "answer": "401 means unauthenticated [S1].", "sources": [S1]},
    {"id": "bad", "answer": "401 means unauthenticated [S1]. 403 means gone [S1].",
     "sources": [S1]},
    {"id": "own", "answer": "403 means forbidden [S1].", "sources": [S1],
     "generator": "fake/judge-model"},
]


def test_to_pandas_has_a_row_per_claim_and_keeps_refused_answers(
        fake_llm: FakeLLM, config: JudgeConfig) -> None:
    frame = judge.judge_answers(RECORDS, config=config).to_pandas()
    assert list(frame.columns)[:6] == ["answer_id", "status", "answer_status", "claim_id",
                                       "claim", "label"]
    assert frame["answer_id"].tolist() == ["ok", "bad", "bad", "own"]
    assert frame.groupby("label").size().to_dict() == {"not_in_source": 1, "supported": 2}
    refused = frame[frame["answer_id"] == "own"].iloc[0]
    assert refused["status"] == "refused" and refused.isna()["claim"]
    assert "self-grading" in refused["refused_reason"]
    assert frame.loc[frame["label"] == "not_in_source", "review"].tolist() == [True]


def test_the_gate_fails_naming_each_claim_over_the_limit(
        fake_llm: FakeLLM, config: JudgeConfig, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "answers.jsonl", RECORDS[:2])
    with pytest.raises(jt.JudgeGateFailed) as failed:
        jt.assert_judged(path, config=config, db=tmp_path / "j.db",
                         max_labels={"not_in_source": 0})
    assert "1 claim(s) not_in_source (at most 0)" in str(failed.value)
    assert "403 means gone" in str(failed.value)
    assert isinstance(failed.value, AssertionError)  # pytest reports a failed test
    passed = jt.assert_judged(path, config=config, db=tmp_path / "j.db",
                              max_labels={"contradicted": 0, "not_in_source": 1})
    assert passed.summary.model_calls == 0  # the second check read the store
    with pytest.raises(jt.JudgeGateFailed, match="flagged for review"):
        jt.assert_judged(passed, max_flagged=0)


def test_the_calibration_gate_checks_the_figures_people_set(
        fake_llm: FakeLLM, config: JudgeConfig, tmp_path: Path) -> None:
    gold = ROOT / "gold" / "samples" / "gold.jsonl"
    result = jt.assert_calibrated(gold, config=config, db=tmp_path / "g.db",
                                  judge_errors_above=0)
    recall = result.report.queue_recall.value
    with pytest.raises(jt.JudgeGateFailed, match="queue"):
        jt.assert_calibrated(gold, config=config, db=tmp_path / "g.db",
                             queue_recall_below=min(1.0, recall + 0.01) if recall < 1 else 2)
    with pytest.raises(TypeError):
        jt.assert_calibrated(gold, config=config, db=tmp_path / "g.db")
