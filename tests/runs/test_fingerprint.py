"""Which code judged a stored verdict: recorded per run and per answer, and a run that reuses
verdicts judged by other code says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.fingerprint import code_fingerprint
from judge.runs.replay import replay_run
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM

AUTH = {"id": "S1", "text": "401 means the caller is not authenticated."}


def batch(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": f"a{i}", "answer": f"401 means not authenticated [S1]. Item {i}.",
          "sources": [AUTH]} for i in range(3)],
    )


def test_fingerprint_is_stable_and_tracks_the_package_code(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    import judge.fingerprint as fp

    first = code_fingerprint()
    assert len(first) == 12 and first == code_fingerprint()
    copy = tmp_path / "judge"
    for path in fp.PACKAGE.rglob("*.py"):
        if "__pycache__" not in path.parts:
            target = copy / path.relative_to(fp.PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    monkeypatch.setattr(fp, "PACKAGE", copy)
    fp.code_fingerprint.cache_clear()
    try:
        assert fp.code_fingerprint() == first  # same bytes, same fingerprint
        (copy / "pipeline.py").write_text((copy / "pipeline.py").read_text() + "\n# changed\n")
        fp.code_fingerprint.cache_clear()
        assert fp.code_fingerprint() != first
    finally:
        fp.code_fingerprint.cache_clear()


def test_reuse_by_the_same_code_is_silent(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = batch(tmp_path)
    first = judge_file(path, config=config, db=store).summary
    assert first.code == code_fingerprint()
    assert store.run(first.run_id)["code"] == code_fingerprint()
    assert {r["code"] for r in store.run_answer_rows(first.run_id)} == {code_fingerprint()}
    second = judge_file(path, config=config, db=store).summary
    assert second.answers_from_store == 3 and second.answers_from_other_code == 0
    assert second.stale_warning("x.db") is None


def test_reuse_of_verdicts_judged_by_other_code_is_reported(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = batch(tmp_path)
    first = judge_file(path, config=config, db=store).summary
    # one answer was stored before fingerprints were recorded: unknown code counts as other
    store.db.execute("update run_answers set code = null where answer_id = 'a0'")
    store.db.conn.commit()
    monkeypatch.setattr("judge.runs.batch.code_fingerprint", lambda: "0123456789ab")
    monkeypatch.setattr("judge.store.answers.code_fingerprint", lambda: "0123456789ab")
    monkeypatch.setattr("judge.store.runs.code_fingerprint", lambda: "0123456789ab")
    second = judge_file(path, config=config, db=store).summary
    assert second.model_calls == 0 and second.answers_from_other_code == 3
    warning = second.stale_warning("out/x.db")
    assert warning is not None and "3 answer(s)" in warning
    assert f"judge replay --db out/x.db --run {second.run_id}" in warning
    # the reused rows keep the code that judged them, not the code that reused them
    codes = {r["answer_id"]: r["code"] for r in store.run_answer_rows(second.run_id)}
    assert codes == {"a0": None, "a1": first.code, "a2": first.code}
    assert store.run(second.run_id)["code"] == "0123456789ab"
    report = replay_run(store, second.run_id)
    assert set(report.stored_code) == {None, first.code}


def test_replay_records_the_answers_this_code_reproduces_and_the_warning_stops(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = batch(tmp_path)
    first = judge_file(path, config=config, db=store).summary
    # as if stored before fingerprints were recorded, with one verdict that this code
    # would not give
    store.db.execute("update run_answers set code = null")
    store.db.execute("update verdicts set label = 'contradicted' where answer_id = 'a1'")
    store.db.conn.commit()
    assert judge_file(path, config=config, db=store).summary.answers_from_other_code == 3
    report = replay_run(store, first.run_id)
    assert report.reproduced == 2 and {d["answer_id"] for d in report.differences} == {"a1"}
    reproduced = {r["answer_id"]: r["reproduced_by"] for r in store.run_answer_rows(first.run_id)}
    assert reproduced["a1"] is None and reproduced["a0"] == f'["{code_fingerprint()}"]'
    again = judge_file(path, config=config, db=store).summary
    assert again.answers_from_other_code == 1  # only the answer replay could not reproduce
    replay_run(store, first.run_id)  # replaying again adds nothing twice
    assert store.run_answer_rows(first.run_id)[0]["reproduced_by"] == f'["{code_fingerprint()}"]'
