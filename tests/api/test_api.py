"""The public Python API: judge in memory, in input order, with every bad record reported."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import judge
from judge.config import JudgeConfig
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM

SRC = {"id": "S1", "text": "HTTP 401 means the client is not authenticated. "
                           "HTTP 403 means the client is authenticated but not allowed."}


def record(answer_id: str, answer: str, **extra: object) -> dict[str, object]:
    return {"id": answer_id, "answer": answer, "sources": [SRC], **extra}


GOOD = [
    record("a1", "HTTP 401 means the client is not authenticated [S1]."),
    record("a2", "HTTP 403 means the server is down [S1]."),
    record("a3", "HTTP 401 means the client is not authenticated [S1].",
           generator="fake/judge-model"),  # the judge's own model: refused
]


def test_judge_answers_in_memory_returns_one_result_per_answer_in_input_order(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    results = judge.judge_answers(GOOD, config=config)
    assert [r.answer_id for r in results] == ["a1", "a2", "a3"]
    assert [r.status for r in results] == ["judged", "judged", "refused"]
    assert (results[2].refused_reason or "").startswith("self-grading refused") and not results[2].verdicts
    first, second = results[0].verdicts[0], results[1].verdicts[0]
    assert isinstance(first, judge.Verdict)
    assert first.claim.startswith("HTTP 401") and first.label == "supported"
    assert second.label == "not_in_source" and second.review
    assert "label:not_in_source" in second.review_reasons and results[1].flagged == [second]
    assert first.evidence and first.evidence[0].found and first.checks
    assert results.summary.model_calls == 4 and results.db is None
    assert list(tmp_path.iterdir()) == []  # nothing written: the store lived in memory


def test_bad_records_raise_one_error_listing_each_before_anything_is_judged(
    config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    bad = [GOOD[0], {"answer": "", "sources": [SRC]}, "not a record",
           record("a1", "a duplicate id [S1]."), {"answer": "x"}]
    with pytest.raises(judge.RecordsError) as caught:
        judge.judge_answers(bad, config=config)
    problems = {p.index: p.reason for p in caught.value.problems}
    assert sorted(problems) == [1, 2, 3, 4]
    assert "answer is empty" in problems[1]
    assert "expected a JSON object" in problems[2]
    assert "duplicate answer id 'a1'" in problems[3] and "record 0" in problems[3]
    assert "sources" in problems[4]
    assert "record 4:" in str(caught.value)
    assert fake_llm.calls == []  # nothing was judged


def test_on_error_skip_judges_the_rest_and_marks_the_bad_ones(
    config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    results = judge.judge_answers([{"answer": " ", "sources": [SRC]}, GOOD[0]], config=config,
                                  on_error="skip")
    assert [r.status for r in results] == ["rejected", "judged"]
    assert results[0].error and results[0].error.startswith("record 0:")
    assert results[1].verdicts and results.summary.rejected_lines[0]["line"] == 1


def test_a_store_makes_the_second_call_free_and_rejects_changed_content(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    db = tmp_path / "judge.db"
    first = judge.judge_answers(GOOD[:2], config=config, db=db)
    again = judge.judge_answers([GOOD[1], GOOD[0]], config=config, db=db)
    assert again.summary.model_calls == 0 and again.summary.answers_from_store == 2
    assert [r.answer_id for r in again] == ["a2", "a1"]
    assert again[1].verdicts == first[0].verdicts
    changed = record("a1", "HTTP 401 means something else [S1].")
    with pytest.raises(judge.RecordsError, match="already stored with different content"):
        judge.judge_answers([changed], config=config, db=db)
    store = Store.open(db)
    try:  # an open store works too, and stays open
        assert judge.judge_answers([GOOD[0]], config=config, db=store)[0].verdicts
        assert store.verdicts("a1", first.summary.judge_version)
    finally:
        store.close()


def test_answer_records_and_jsonl_sources_are_accepted(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    parsed = judge.AnswerRecord.model_validate(GOOD[0])
    assert judge.judge_answers([parsed], config=config)[0].status == "judged"
    path = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], "{not json", GOOD[1]])
    from_file = judge.judge_file(path, config=config)
    assert [r.status for r in from_file] == ["judged", "rejected", "judged"]
    assert from_file[1].error and from_file[1].error.startswith("line 2:")
    stream = judge.judge_file(io.BytesIO(path.read_bytes()), config=config)
    assert [r.status for r in stream] == ["judged", "rejected", "judged"]
    with pytest.raises(judge.RecordsError, match="line 2"):
        judge.judge_file(path, config=config, on_error="raise")


def test_config_comes_from_judge_toml_in_the_working_directory(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLAIM_JUDGE_CONFIG", raising=False)
    assert judge.load_config().model == judge.DEFAULT_MODEL  # no file: the default
    (tmp_path / "judge.toml").write_text(
        '[judge]\nmodel = "fake/judge-model"\nstrategy = "batch"\nretries = 1\n',
        encoding="utf-8")
    assert judge.load_config().model == "fake/judge-model"
    results = judge.judge_answers([GOOD[0]])
    assert results.summary.judge_version.startswith("judge-model@")
    other = tmp_path / "other.toml"
    other.write_text('model = "fake/other-model"\nstrategy = "batch"\n', encoding="utf-8")
    monkeypatch.setenv("CLAIM_JUDGE_CONFIG", str(other))
    assert judge.load_config().model == "fake/other-model"
    assert judge.load_config(tmp_path / "judge.toml", concurrency=3).concurrency == 3
    with pytest.raises(ValueError, match="not found"):
        judge.load_config(tmp_path / "missing.toml")


def test_the_api_works_inside_a_running_event_loop(
    config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    import asyncio

    async def caller() -> list[str]:
        return [r.status for r in judge.judge_answers(GOOD[:1], config=config)]

    assert asyncio.run(caller()) == ["judged"]


def test_progress_is_reported(config: JudgeConfig, fake_llm: FakeLLM) -> None:
    seen: list[tuple[int, int]] = []
    judge.judge_answers(GOOD[:2], config=config, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)


def test_importing_judge_is_cheap() -> None:
    import subprocess
    import sys

    code = ("import sys, judge; print(sorted(m for m in ('litellm', 'scipy', 'instructor') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert out.stdout.strip() == "[]"
