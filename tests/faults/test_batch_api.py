"""``judge run --batch-api`` and ``--batch-file`` against a loopback server implementing the
OpenAI files and batches endpoints (:mod:`tests.support.batch_server`): the same verdicts and
stored calls as an online run with no online chat call, a run killed while its batch is in
progress picked up without sending a request twice, failed and expired requests becoming
``judge_error`` claims (or sent online when asked), budgets kept before a batch is sent, and
the ``vllm run-batch`` file round trip."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import judge
from judge.config import JudgeConfig
from judge.runs.deferred import BatchMode
from judge.store import Store
from tests.faults.harness import env, judge_cmd, wait_for, write_config, write_records
from tests.support.batch_server import BatchServer, vllm_output

MODEL = "openai/gpt-4.1-mini"  # what `judge init` pins, with its default strategy


def records(n: int = 6) -> list[dict[str, Any]]:
    """``n`` answers of two claims each, one in the source and one not: distinct calls."""
    return [{"id": f"r{i}", "generator": "anthropic/claude-haiku-4-5",
             "answer": f"Box {i} is red [S1]. Box {i} weighs {i + 2} kg.",
             "sources": [{"id": "S1", "text": f"Box {i} is red. It was packed in 2021."}]}
            for i in range(n)]


@pytest.fixture
def server() -> Iterator[BatchServer]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with BatchServer() as s:
        yield s


def config(server: BatchServer, **extra: Any) -> JudgeConfig:
    return JudgeConfig(model=MODEL, api_base=server.base_url, retries=0, timeout_s=30, **extra)


def fast(**extra: Any) -> BatchMode:
    return BatchMode(api=True, poll_s=0.05, **extra)


def labels(results: judge.JudgeResults) -> list[tuple[str, str, str]]:
    return [(r.answer_id or "", v.claim, v.label) for r in results for v in r.verdicts]


def calls(db: Path) -> dict[str, dict[str, Any]]:
    store = Store.open(db)
    try:
        return {r["id"]: r for r in store.rows("select * from calls")}
    finally:
        store.close()


def test_a_batch_run_gives_the_online_verdicts_and_calls_with_no_online_call(
    server: BatchServer, tmp_path: Path
) -> None:
    online = judge.judge_answers(records(), config=config(server), db=tmp_path / "on.db")
    sent_online = {json.dumps(r["body"], sort_keys=True) for r in server.calls()}
    server.requests.clear()
    jobs: list[list[dict[str, Any]]] = []
    batched = judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                                  batch=fast(progress=jobs.append))
    assert server.calls() == []  # 0 online chat calls
    assert labels(batched) == labels(online)
    assert {"supported", "not_in_source"} <= {label for *_, label in labels(batched)}
    # two batches: the splits, then the verifications; every request sent once
    assert sorted({j["phase"] for view in jobs for j in view}) == [1, 2]
    assert set(server.batch_lines.values()) == {1}
    # the requests are the online requests, byte for byte (model, messages, schema, params)
    in_files = {json.dumps(line["body"], sort_keys=True)
                for fid, (purpose, _) in server.files.items() if purpose == "batch"
                for line in server._lines(fid)}
    assert in_files == sent_online
    # every call stored as online, same ids, same outputs; the batch price is half
    on, off = calls(tmp_path / "on.db"), calls(tmp_path / "b.db")
    assert set(on) == set(off) == set(server.batch_lines)
    for call_id, row in on.items():
        same = ("purpose", "template", "params", "messages", "response_schema", "parsed",
                "raw_output", "error", "prompt_tokens", "completion_tokens", "model_answered")
        assert {k: off[call_id][k] for k in same} == {k: row[k] for k in same}
        assert off[call_id]["cost"] == pytest.approx(row["cost"] / 2)
    assert batched.summary.cost == pytest.approx(online.summary.cost / 2)
    # the stored run is replayed from its calls like an online one
    again = judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                                batch=fast())
    assert again.summary.model_calls == 0 and sum(server.batch_lines.values()) == len(on)


def test_requests_are_cut_into_jobs_within_the_limits(server: BatchServer,
                                                      tmp_path: Path) -> None:
    results = judge.judge_answers(records(5), config=config(server), db=tmp_path / "b.db",
                                  batch=fast(max_requests=2))
    assert all(v.label != "judge_error" for r in results for v in r.verdicts)
    store = Store.open(tmp_path / "b.db")
    try:
        jobs = store.batch_jobs()
        # jobs of at most 2 requests, whatever order the store lists them in
        assert sorted(j["requests"] for j in jobs if j["phase"] == 1) == [1, 2, 2]
        assert all(j["state"] == "read" for j in jobs)
    finally:
        store.close()
    assert len(server.batches) == 6 and set(server.batch_lines.values()) == {1}


@pytest.mark.parametrize("fault", [{"kind": "fail_share", "share": 0.5},
                                   {"kind": "expire", "keep": 0.5}])
def test_failed_and_expired_requests_are_judge_errors_and_nothing_is_lost(
    server: BatchServer, tmp_path: Path, fault: dict[str, Any]
) -> None:
    server.batch_fault(**fault)  # the first batch: the splits
    results = judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                                  batch=fast())
    assert [r.status for r in results] == ["judged"] * 6  # every answer has its verdicts
    failed = [r for r in results if any(v.label == "judge_error" for v in r.verdicts)]
    assert len(failed) == 3  # the half whose split failed: nothing else
    for result in failed:
        assert [v.label for v in result.verdicts] == ["judge_error"]
        assert "batch" in (result.verdicts[0].error or "")
    assert server.calls() == []
    errors = [row for row in calls(tmp_path / "b.db").values() if row["error"]]
    assert len(errors) == 3 and all(row["parsed"] is None for row in errors)


def test_failed_requests_are_sent_online_when_asked(server: BatchServer,
                                                    tmp_path: Path) -> None:
    server.batch_fault("fail_share", share=0.5)
    online = judge.judge_answers(records(), config=config(server), db=tmp_path / "on.db")
    server.requests.clear()
    results = judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                                  batch=fast(resend_online=True))
    assert labels(results) == labels(online)
    assert [r["kind"] for r in server.calls()] == ["split"] * 3  # the failed ones, once each


def test_a_failed_batch_and_one_that_never_finishes(server: BatchServer,
                                                    tmp_path: Path) -> None:
    server.batch_fault("never")
    with pytest.raises(judge.RunStopped) as stopped:
        judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                            batch=fast(wait_s=0.3))
    assert "still in progress" in str(stopped.value)
    assert stopped.value.summary.pending == 6 and stopped.value.summary.exit_code == 4
    # the batch is given up at the provider: it fails; the answers become judge_error
    (batch,) = server.batches.values()
    batch.fault = None
    batch.status = "failed"
    results = judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                                  batch=fast())
    assert len(server.batches) == 1 and set(server.batch_lines.values()) == {1}
    assert {v.label for r in results for v in r.verdicts} == {"judge_error"}
    assert all("failed" in (v.error or "") for r in results for v in r.verdicts)


def test_budgets_are_checked_before_a_batch_is_sent(server: BatchServer,
                                                    tmp_path: Path) -> None:
    with pytest.raises(judge.RunStopped) as stopped:
        judge.judge_answers(records(), config=config(server), db=tmp_path / "b.db",
                            batch=fast(), max_calls=4)
    assert "max_calls" in str(stopped.value)
    assert sum(server.batch_lines.values()) == 4  # the calls that fit, nothing more
    # admission reserves an answer's split and verification: the budget buys two verdicts
    assert "2 of 6 answers finished" in str(stopped.value)
    assert stopped.value.summary.pending == 4


def test_killed_while_its_batch_runs_the_run_picks_it_up_and_sends_nothing_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    server.batch_delay_s = 3600  # in progress until told otherwise
    write_records(tmp_path / "in.jsonl", records())
    write_config(tmp_path / "judge.toml", server.base_url, model=MODEL, retries=0,
                 timeout_s=30)
    run = judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c", "judge.toml", "--json",
                    "--batch-api", "--batch-poll", "0.05")
    db = tmp_path / "judge.db"

    def submitted() -> bool:
        try:
            with sqlite3.connect(db, timeout=30) as conn:
                return bool(conn.execute("select count(*) from batch_jobs where state = "
                                         "'submitted'").fetchone()[0])
        except sqlite3.Error:
            return False

    proc = subprocess.Popen(run, cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert wait_for(submitted, timeout=120)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    sent = dict(server.batch_lines)
    assert len(sent) == 6 and len(server.batches) == 1
    # as if killed after the provider created the batch but before its id was recorded
    with sqlite3.connect(db) as conn:
        conn.execute("update batch_jobs set state = 'uploaded', batch_id = null")
    server.batch_delay_s = 0
    done = subprocess.run(run, cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode in (0, 3), done.stderr
    summary = json.loads(done.stdout)
    assert summary["answers"] == 6 and summary["judge_errors"] == 0
    assert server.calls() == []
    assert set(server.batch_lines.values()) == {1}  # no request sent twice
    assert len(server.batches) == 2  # the splits' (picked up), the verifications'
    expected = labels(judge.judge_answers(records(), config=config(server),
                                          db=tmp_path / "on.db"))
    assert labels(judge.judge_answers(records(), config=config(server), db=db)) == expected


def test_batch_file_round_trips_through_a_vllm_run_batch_output(
    server: BatchServer, tmp_path: Path
) -> None:
    online = judge.judge_answers(records(), config=config(server), db=tmp_path / "on.db")
    server.requests.clear()
    requests, output = tmp_path / "out" / "x.jsonl", tmp_path / "out" / "y.jsonl"
    phases = []
    for step in range(3):
        mode = BatchMode(file=requests, output=output if step else None)
        try:
            results = judge.judge_answers(records(), config=config(server),
                                          db=tmp_path / "b.db", batch=mode)
            break
        except judge.RunStopped as exc:
            assert f"wrote {6 if step < 2 else 0} request(s) to {requests}" in str(exc)
            lines = [json.loads(x) for x in requests.read_text().splitlines()]
            assert all(x["method"] == "POST" and x["url"] == "/v1/chat/completions"
                       and x["body"]["model"] == "gpt-4.1-mini" for x in lines)
            phases.append({x["body"]["response_format"]["json_schema"]["name"]
                           for x in lines})
            output.write_text(vllm_output(requests.read_text(), server.complete))
    assert phases == [{"SplitOutputV2"}, {"CompactVerifyOutput"}]
    assert server.calls() == []
    assert labels(results) == labels(online)


def test_batch_mode_refuses_the_embedded_model_and_bad_combinations(tmp_path: Path) -> None:
    from judge.config import DEFAULT_MODEL

    assert "runs in this process" in (BatchMode(api=True).refusal(DEFAULT_MODEL) or "")
    assert "not both" in (BatchMode(api=True, file=tmp_path / "x").refusal(MODEL) or "")
    assert "give both" in (BatchMode(output=tmp_path / "y").refusal(MODEL) or "")
    assert "local executor" in (BatchMode(api=True).refusal(MODEL, "ray") or "")
    assert BatchMode(api=True).refusal(MODEL) is None
    write_records(tmp_path / "in.jsonl", records(1))
    done = subprocess.run(judge_cmd("run", "in.jsonl", "--db", "j.db", "--batch-api"),
                          cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 64
    assert "runs in this process" in " ".join(done.stderr.split())
    assert not (tmp_path / "j.db").exists()


def test_jobs_stay_within_the_request_and_byte_limits() -> None:
    import asyncio

    from judge.models.prompts import RenderedPrompt
    from judge.runs.batch_jobs import _line, chunks
    from judge.runs.deferred import Pending

    async def make() -> list[Pending]:
        loop = asyncio.get_running_loop()
        prompt = RenderedPrompt("p", "v1", "0" * 64, [{"role": "user", "content": "x"}])
        return [Pending(f"call-{i}", {"messages": [{"role": "user", "content": "x" * size}]},
                        prompt, 1, lambda outcome: None, loop.create_future())
                for i, size in enumerate([100, 100, 100, 5000, 100])]

    batch = asyncio.run(make())
    sizes = [len(_line(p)) for p in batch]
    by_bytes = chunks(batch, 50_000, sum(sizes[:2]) + 10)
    assert [[p.call_id for p in job] for job in by_bytes] == [
        ["call-0", "call-1"], ["call-2"], ["call-3"], ["call-4"]]
    assert all(sum(len(_line(p)) for p in job) <= sum(sizes[:2]) + 10 or len(job) == 1
               for job in by_bytes)
    assert [len(job) for job in chunks(batch, 2, 10**9)] == [2, 2, 1]
