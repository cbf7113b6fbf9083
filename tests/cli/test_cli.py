from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}


def cli(*args: str, latency: float = 0.0, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    env = {**os.environ, "FAKE_LATENCY": str(latency), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tests.fake_cli", *args], capture_output=True, text=True,
        env=env, cwd=ROOT, timeout=300, **kw,
    )


def test_run_json_contract_and_exit_code_2_on_rejected_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "a", "answer": "401 means unauthenticated [S1].", "sources": [AUTH]},
         "{broken", {"id": "b", "answer": "", "sources": [AUTH]},
         {"id": "c", "answer": "403 means forbidden [S1].", "sources": [AUTH],
          "generator": "fake/judge-model"}],
    )
    db = tmp_path / "j.db"
    proc = cli("run", str(path), "--db", str(db), "--model", "fake/judge-model", "--json")
    assert proc.returncode == 2, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("run_id", "judge_version", "answers", "claims", "labels", "flagged",
                "judge_errors", "refused_answers", "rejected_lines", "model_calls",
                "cached_calls"):
        assert key in out
    assert [r["line"] for r in out["rejected_lines"]] == [2, 3]
    assert out["answers"] == 2 and out["claims"] == 1 and out["labels"] == {"supported": 1}
    assert out["refused_answers"][0]["answer_id"] == "c"
    assert "line 2 rejected" in proc.stderr
    again = json.loads(cli("run", str(path), "--db", str(db), "--model", "fake/judge-model",
                           "--json").stdout)
    assert again["model_calls"] == 0 and again["claims"] == 1

    export = cli("export", "--db", str(db), "--format", "jsonl")
    line = json.loads(export.stdout.splitlines()[0])
    for key in ("answer_id", "claim_id", "claim", "citations", "label", "subtype", "evidence",
                "checks", "strength", "support", "review", "review_reasons", "judge_version"):
        assert key in line
    assert line["support"] is None  # the structured strategy gives no probability
    csv_out = cli("export", "--db", str(db), "--format", "csv").stdout
    assert csv_out.splitlines()[0].startswith("\ufeffanswer_id,claim_id,claim,label")

    shown = cli("show", "a", "--db", str(db))
    assert shown.returncode == 0 and "supported" in shown.stdout and "401" in shown.stdout
    replayed = cli("replay", "--db", str(db), "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["clean"] is True


def test_replay_reports_a_tampered_verdict(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl",
                       [{"id": "a", "answer": "401 means unauthenticated [S1].", "sources": [AUTH]}])
    db = tmp_path / "j.db"
    assert cli("run", str(path), "--db", str(db), "--model", "fake/judge-model").returncode == 0
    with sqlite3.connect(db) as conn:
        conn.execute("update verdicts set label = 'contradicted'")
    proc = cli("replay", "--db", str(db), "--json")
    assert proc.returncode == 1
    diffs = json.loads(proc.stdout)["differences"]
    assert diffs[0]["field"] == "label" and diffs[0]["stored"] == "contradicted"
    assert diffs[0]["replayed"] == "supported"


def test_killed_run_resumes_without_losing_or_duplicating(tmp_path: Path) -> None:
    records = [{"id": f"a{i:02d}", "answer": f"401 means unauthenticated [S1]. Item {i} [S1].",
                "sources": [AUTH]} for i in range(12)]
    path = write_jsonl(tmp_path / "in.jsonl", records)
    db = tmp_path / "j.db"
    env = {**os.environ, "FAKE_LATENCY": "0.15", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_cli", "run", str(path), "--db", str(db),
         "--model", "fake/judge-model"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    done = 0
    while time.time() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    done = conn.execute("select count(*) from run_answers").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
        if done >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 3 <= done < 12, "the run should have been killed mid-way"
    out = cli("run", str(path), "--db", str(db), "--model", "fake/judge-model", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["resumed"] is True and summary["answers"] == 12
    with sqlite3.connect(db) as conn:
        per_claim = conn.execute(
            "select claim_id, count(*) from verdicts group by claim_id having count(*) > 1"
        ).fetchall()
        answers = conn.execute("select count(distinct answer_id) from verdicts").fetchone()[0]
        claims = conn.execute("select count(*) from verdicts").fetchone()[0]
    assert per_claim == [] and answers == 12 and claims == 24
    assert summary["claims"] == 24


def test_show_prints_evidence_source_ids_that_look_like_markup_tags(tmp_path: Path) -> None:
    """A source id such as ``csrf-guide`` between brackets reads as a rich style tag; `judge
    show` must print it, not swallow it."""
    guide = {"id": "csrf-guide", "text": "CSRF tokens protect cookie sessions."}
    path = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "g", "answer": "CSRF tokens protect cookie sessions [csrf-guide].",
         "sources": [guide]}])
    db = tmp_path / "j.db"
    assert cli("run", str(path), "--db", str(db), "--model", "fake/judge-model",
               "--json").returncode == 0
    shown = cli("show", "g", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "evidence [csrf-guide] found" in shown.stdout
