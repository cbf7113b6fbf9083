"""Batched store writes: answers and calls are committed together (every N answers or every
second, and at the end); an answer is reported done only once committed, so a ``kill -9`` loses
nothing that was reported and duplicates nothing; one answer's failing write is rolled back
alone; and the independent calls of one answer run at once even at concurrency 1."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_answers, judge_file
from judge.config import JudgeConfig
from judge.store import Store
from judge.store.buffer import WriteBuffer
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}

CHILD = """
import sys
from tests.fakes import FakeLLM, install
install(FakeLLM(latency_s=0.05))
from judge.api import judge_file
from judge.config import JudgeConfig

def progress(done, total):
    print(f"done {done}", flush=True)

judge_file(sys.argv[1], config=JudgeConfig(model="fake/judge-model"), db=sys.argv[2],
           progress=progress)
"""


def records(n: int) -> list[dict[str, Any]]:
    return [{"id": f"a{i:03d}", "answer": f"401 means unauthenticated [S1]. Item {i} [S1].",
             "sources": [AUTH]} for i in range(n)]


def test_kill_9_loses_nothing_reported_and_duplicates_nothing(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", records(40))
    db = tmp_path / "j.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(db)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    reported = 0
    deadline = time.time() + 120
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported = int(line.split()[1])
        if reported >= 3:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 3 <= reported < 40, "the run should have been killed mid-way"
    with sqlite3.connect(db) as conn:
        stored = conn.execute("select count(*) from run_answers").fetchone()[0]
        calls = conn.execute("select count(*) from calls").fetchone()[0]
    assert stored >= reported  # everything reported done was committed
    assert calls >= 2 * stored  # with the calls that made it

    fake = FakeLLM()
    from tests.fakes import install

    install(fake)
    resumed = judge_file(path, config=JudgeConfig(model="fake/judge-model"), db=db)
    assert resumed.summary.resumed and resumed.summary.answers == 40
    assert resumed.summary.answers_judged_now == 40 - stored
    with sqlite3.connect(db) as conn:
        doubled = conn.execute("select claim_id from verdicts group by claim_id "
                               "having count(*) > 1").fetchall()
        answers = conn.execute("select count(distinct answer_id) from verdicts").fetchone()[0]
    assert doubled == [] and answers == 40
    fresh = judge_file(path, config=JudgeConfig(model="fake/judge-model"),
                       db=tmp_path / "fresh.db")
    assert [[(v.claim_id, v.label) for v in r.verdicts] for r in resumed] == \
        [[(v.claim_id, v.label) for v in r.verdicts] for r in fresh]


def test_answers_are_reported_only_once_committed(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig
) -> None:
    store = Store.open(tmp_path / "j.db")
    buffer = WriteBuffer(store, answers=3, seconds=3600)
    done: list[int] = []
    for i in range(5):
        buffer.add_answer(lambda i=i: store.db.execute(
            "insert into _migrations (name, applied_at) values (?, 'x')", [f"t{i}"]),
            lambda i=i: done.append(i))
    assert done == [0, 1, 2] and buffer.commits == 1  # the first three, once committed
    buffer.save_call({"id": "call-x", "purpose": "p", "error": None, "raw_output": "{}",
                      "parsed": {"a": 1}})
    assert buffer.get_call("call-x")["parsed"] == '{"a": 1}'  # served from the buffer
    assert store.get_call("call-x") is None
    buffer.flush()
    assert done == [0, 1, 2, 3, 4] and store.get_call("call-x") is not None


def test_a_failing_answer_write_is_rolled_back_alone(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "j.db")
    buffer = WriteBuffer(store, answers=100, seconds=3600)
    done: list[str] = []

    def good(name: str) -> Any:
        return lambda: store.db.execute(
            "insert into _migrations (name, applied_at) values (?, 'x')", [name])

    def bad() -> None:
        good("half")()
        raise ValueError("cannot store this one")

    buffer.add_answer(good("one"), lambda: done.append("one"))
    buffer.add_answer(bad, lambda: done.append("bad"))
    buffer.add_answer(good("two"), lambda: done.append("two"))
    with pytest.raises(ValueError, match="cannot store"):
        buffer.flush()
    names = {r["name"] for r in store.rows("select name from _migrations")}
    assert {"one", "two"} <= names and "half" not in names
    assert done == ["one", "two"]


def test_independent_calls_of_one_answer_run_at_once_at_concurrency_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def slow(schema: str, messages: list[dict[str, Any]]) -> Any:
        from tests.fakes import rule_responder

        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        return rule_responder(schema, messages)

    claims = [f"401 means unauthenticated {i}." for i in range(4)]
    record = {"id": "a", "answer": " ".join(claims), "sources": [AUTH],
              "claims": [{"text": t, "citations": ["S1"]} for t in claims]}
    with OpenAIServer(responder=slow) as server:
        config = JudgeConfig(model="openai/judge-model", api_base=server.base_url,
                             prompts={"split_claims": "v1", "verify_claims": "v1"},
                             verify_batch_size=1, concurrency=1, retries=0)
        judge_answers([record], config=config)
        assert len(server.calls("verify")) == 4
    assert state["most"] == 4  # the four verify calls of the answer were in flight together
