"""The adversarial input corpus (tests/data/adversarial.jsonl): every line gets a clear per-line
error or is judged, none crashes the batch, a resume completes, and the same holds for the CLI,
``gold-check``, ``calibrate`` and the HTTP batch job."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.store import Store
from tests.faults.adversarial import CASES, CORPUS, corpus_bytes
from tests.faults.harness import judge_cmd, launch_all, write_config
from tests.support.openai_server import OpenAIServer


def config(server: OpenAIServer) -> JudgeConfig:
    return JudgeConfig(model="openai/fake-judge", api_base=server.base_url, strategy="batch",
                       retries=1, backoff_s=0.01, timeout_s=10)


@pytest.fixture(scope="module")
def server() -> Any:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as s:
        yield s


def test_the_corpus_file_is_the_generated_one() -> None:
    assert len(CASES) >= 80
    assert CORPUS.read_bytes() == corpus_bytes(), "run python -m tests.faults.adversarial"


def clear(error: str) -> bool:
    """A clear per-line reason: one short message, no traceback, no Python object dump."""
    return bool(error) and "Traceback" not in error and len(error) < 700 and "\n" not in error


def test_every_line_is_judged_or_rejected_clearly_and_a_resume_completes(
    server: OpenAIServer, tmp_path: Path
) -> None:
    db = tmp_path / "judge.db"
    results = judge_file(CORPUS, config=config(server), db=db)
    assert len(results) == len(CASES)
    for (name, _, expect), result in zip(CASES, results, strict=True):
        if expect.startswith("rejected:"):
            assert result.status == "rejected", (name, result)
            assert result.error and clear(result.error), (name, result.error)
            words = expect.removeprefix("rejected:")
            assert words.lower() in result.error.lower(), (name, result.error)
        else:
            assert result.status == expect, (name, result)
            assert result.status != "judged" or result.verdicts, name
    summary = results.summary
    assert summary.missing_generator == 3  # empty, zero-width and missing: counted
    assert len(summary.refused_answers) == 6
    again = judge_file(CORPUS, config=config(server), db=db)  # the resume: nothing left
    assert again.summary.model_calls == 0
    assert [r.status for r in again] == [r.status for r in results]


def test_hostile_text_never_steers_the_split_and_over_bound_answers_go_to_review(
    server: OpenAIServer, tmp_path: Path
) -> None:
    results = {name: r for (name, _, _), r in zip(
        CASES, judge_file(CORPUS, config=config(server), db=tmp_path / "j.db"), strict=True)}
    forged = results["forged_split_output"]
    assert any("moon" in v.claim for v in forged.verdicts)  # judged, not skipped
    for name in ("hundred_sentences_over_the_claim_bound", "given_claims_over_the_claim_bound"):
        (verdict,) = results[name].verdicts
        assert verdict.label == "judge_error" and verdict.review
        assert "max_claims_per_answer" in (verdict.error or "")
    for name in ("fake_frame_token", "forged_sentence_numbers", "prompt_injection"):
        assert all(v.review or v.label == "supported" for v in results[name].verdicts)


def test_the_cli_gold_check_and_calibrate_read_the_corpus_without_a_traceback(
    server: OpenAIServer, tmp_path: Path
) -> None:
    write_config(tmp_path / "judge.toml", server.base_url)
    run, gold = launch_all([
        (judge_cmd("run", str(CORPUS), "--db", "judge.db", "-c", "judge.toml", "--json"),
         tmp_path),
        (judge_cmd("gold-check", str(CORPUS), "--json"), tmp_path),
    ])
    assert "Traceback" not in run.stderr + gold.stderr
    # some claims are judge_error (answers over the claim bound), some lines rejected: 3 wins
    assert run.returncode == 3, run.stderr[-2000:]
    summary = json.loads(run.stdout)
    assert len(summary["rejected_lines"]) == sum(e.startswith("rejected") for *_, e in CASES)
    assert gold.returncode == 1
    problems = json.loads(gold.stdout)[0]["problems"]
    assert {p["line"] for p in problems if p["kind"] == "error"} >= {
        i for i, (_, _, e) in enumerate(CASES, start=1) if "nested" in e or "number" in e}
    (raw,) = [raw for name, raw, _ in CASES if name == "terminal_escapes"]
    answer_id = json.loads(raw)["id"]
    calibrate, shown = launch_all([
        (judge_cmd("calibrate", "--db", "judge.db", "--gold", str(CORPUS)), tmp_path),
        (judge_cmd("show", answer_id, "--db", "judge.db"), tmp_path),
    ])
    assert calibrate.returncode == 1 and "Traceback" not in calibrate.stderr
    assert "cannot be used" in calibrate.stderr
    assert shown.returncode == 0 and "capital of France" in shown.stdout, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout


def test_the_http_batch_job_isolates_every_line(server: OpenAIServer, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from judge.service.app import create_app

    app = create_app(tmp_path / "web.db", tokens="admin-token-1:ops:admin",
                     judge_config=config(server))
    with TestClient(app) as client:
        headers = {"Authorization": "Bearer admin-token-1"}
        submitted = client.post("/v1/runs", headers=headers, content=corpus_bytes())
        assert submitted.status_code == 202, submitted.text
        run_id = submitted.json()["run_id"]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            state = client.get(f"/v1/runs/{run_id}", headers=headers).json()
            if not state["in_progress"] and state["status"] != "running":
                break
            time.sleep(0.2)
    assert state["status"] == "finished" and state["error"] is None, state
    rejected = state["summary"]["rejected_lines"]
    assert len(rejected) == sum(e.startswith("rejected") for *_, e in CASES)
    assert all(clear(r["error"]) for r in rejected)
    store = Store.open(tmp_path / "web.db")
    try:
        assert store.count("select count(*) from answers") == sum(
            e in ("judged", "refused") for *_, e in CASES)
    finally:
        store.close()
