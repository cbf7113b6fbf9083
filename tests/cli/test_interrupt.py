"""Ctrl-C during ``judge run``: exit 130 with the resume hint and no ``coroutine ... was never
awaited`` warning, and the same command then finishes the batch without judging again what
the interrupted run stored.

The run goes through litellm to a real OpenAI-compatible server on 127.0.0.1 at ``-j 16`` with
0.1 s a call (a whole run takes seconds, so each SIGINT lands mid-way) and 16 calls in
flight, so calls are being built on the executor's threads all the time: a SIGINT then
often cancels a call whose request coroutine was just built (before judge.runs.loop closed
those, about every second interrupt printed the warning, so the run is interrupted three
times; tests/runs/test_loop.py checks the mechanism deterministically).

The child starts with SIGINT handled whatever this process inherited: a shell without job
control starts background commands (``make test > log &``) with SIGINT ignored, a child inherits
that through exec and runs to the end (exit 0: seen in every backgrounded ``make test``, never
in the foreground or CI), which is right for ``judge run`` and says nothing about Ctrl-C. While
this process catches SIGINT, exec gives the child the default action and Python its handler."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.harness import env, judge_cmd, write_config, write_records
from tests.support.openai_server import OpenAIServer

SOURCE = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}
ANSWERS = 160
INTERRUPTS = 3


def _stored_answers(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("select count(distinct answer_id) from verdicts")
                       .fetchone()[0])
    except sqlite3.OperationalError:  # the tables are not there yet
        return 0


@pytest.fixture
def sigint_caught() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_caught")
def test_ctrl_c_exits_130_cleanly_and_the_run_resumes(tmp_path: Path) -> None:
    records = [{"id": f"a{i:03d}", "answer": f"401 means unauthenticated [S1]. Item {i} is "
                "listed [S1].", "sources": [SOURCE]} for i in range(ANSWERS)]
    path = write_records(tmp_path / "in.jsonl", records)
    db = tmp_path / "judge.db"
    kept = 0
    with OpenAIServer() as server:
        server.latency_s = 0.1
        config = write_config(tmp_path / "judge.toml", server.base_url, timeout_s=30.0,
                              concurrency=16)
        run = judge_cmd("run", str(path), "--db", str(db), "-c", str(config), "--json")
        for _ in range(INTERRUPTS):  # each resumes the last and is interrupted in turn
            proc = subprocess.Popen(run, cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 240
            while (_stored_answers(db) < kept + 2 and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, err
            assert "interrupted; run the same command again to resume" in err
            assert "never awaited" not in err, err
            assert "Traceback" not in err, err
            stored = _stored_answers(db)
            assert kept + 2 <= stored < ANSWERS, "the run should have been interrupted mid-way"
            kept = stored

        again = subprocess.run(run, cwd=tmp_path, env=env(), capture_output=True, text=True,
                               timeout=600, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["resumed"] is True and summary["answers"] == ANSWERS
    assert summary["answers_judged_now"] == ANSWERS - kept  # what was stored is not judged again
    with sqlite3.connect(db) as conn:
        twice = conn.execute("select claim_id from verdicts group by claim_id "
                             "having count(*) > 1").fetchall()
        claims = conn.execute("select count(*) from verdicts").fetchone()[0]
    assert twice == [] and claims == 2 * ANSWERS
