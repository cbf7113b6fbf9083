"""Races between runs on one store, and runs killed with SIGKILL: real processes, a real HTTP
server. Concurrent runs share the work (no call is made twice), an id with two contents is
stored once whichever run comes first, and a killed run resumes losing and duplicating
nothing."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from judge.store import Store
from tests.faults.harness import box_records as records
from tests.faults.harness import judge_cmd, kill_and_resume, launch_all, write_config, write_records
from tests.support.openai_server import OpenAIServer


def test_two_runs_on_one_store_share_the_work(tmp_path: Path) -> None:
    n = 20
    with OpenAIServer() as server:
        server.latency_s = 0.2  # long enough that both processes are judging at once
        write_records(tmp_path / "in.jsonl", records(n))
        write_config(tmp_path / "judge.toml", server.base_url, concurrency=2)
        run = judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c", "judge.toml", "--json")
        first, second = launch_all([(run, tmp_path), (run, tmp_path)])
        kinds = Counter(r["kind"] for r in server.calls())
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    # one split and one verify per answer, whichever process made them: no call repeated
    assert kinds == {"split": n, "verify": n}
    summaries = [json.loads(proc.stdout) for proc in (first, second)]
    assert [s["answers"] for s in summaries] == [n, n]
    judged = [s["answers_judged_now"] for s in summaries]
    assert sum(judged) == n and min(judged) > 0, judged  # both worked, each on its share
    store = Store.open(tmp_path / "judge.db")
    try:
        rows = list(store.verdict_rows())
        assert len(rows) == n and {r["label"] for r in rows} == {"supported"}
        assert store.count("select count(*) from answer_leases") == 0  # all released
    finally:
        store.close()


def test_an_id_with_two_contents_is_stored_once_whoever_comes_first(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.latency_s = 0.05
        write_records(tmp_path / "red.jsonl", records(8, "red"))
        write_records(tmp_path / "blue.jsonl", records(8, "blue"))
        write_config(tmp_path / "judge.toml", server.base_url, concurrency=2)
        red, blue = launch_all([
            (judge_cmd("run", name, "--db", "judge.db", "-c", "judge.toml", "--json"), tmp_path)
            for name in ("red.jsonl", "blue.jsonl")])
        splits = len(server.calls("split"))
    outcome = {name: json.loads(proc.stdout) for name, proc in (("red", red), ("blue", blue))}
    rejected = {name: {r["line"] for r in s["rejected_lines"]} for name, s in outcome.items()}
    for name, proc in (("red", red), ("blue", blue)):
        assert proc.returncode == (2 if rejected[name] else 0), proc.stderr
        assert all("different content" in r["error"] for r in outcome[name]["rejected_lines"])
    # every id lost by exactly one run, and judged once (no call for the losing content)
    assert sorted(rejected["red"] | rejected["blue"]) == list(range(1, 9))
    assert not rejected["red"] & rejected["blue"]
    assert splits == 8
    store = Store.open(tmp_path / "judge.db")
    try:
        for row in store.verdict_rows():
            stored = store.answer(row["answer_id"])
            assert stored is not None
            colour = "red" if "red" in stored["answer"] else "blue"
            assert colour in row["claim"]  # claims of one content only, never mixed
        assert store.count("select count(*) from answers") == 8
    finally:
        store.close()


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    n = 16
    report = kill_and_resume(tmp_path, n, targets=(3, 9))  # two kills, each then resumed
    assert report.kills == 2 and report.final_code == 0
    assert report.lost == 0 and report.duplicated == 0
    summary = report.summary
    assert summary["resumed"] and summary["answers"] == n and summary["claims"] == n
    # a call cut off by a kill may be made again; nothing finished is: at most the in-flight
    # calls (concurrency 2) of each kill are repeated
    assert n <= report.requests["split"] <= n + 4 and n <= report.requests["verify"] <= n + 4
    store = Store.open(tmp_path / "judge.db")
    try:
        ok = store.rows("select id from calls where error is null")
        assert len(ok) == 2 * n and len({c["id"] for c in ok}) == 2 * n
        assert store.count("select count(*) from answer_leases") == 0
    finally:
        store.close()


def test_piped_and_process_substituted_input_is_read_once_and_judged(tmp_path: Path) -> None:
    import shlex
    import subprocess

    from tests.faults.harness import env

    with OpenAIServer() as server:
        write_records(tmp_path / "in.jsonl", records(3))
        write_config(tmp_path / "judge.toml", server.base_url)
        run = " ".join(shlex.quote(a) for a in judge_cmd("run"))
        commands = {
            "pipe": f"cat in.jsonl | {run} - --db pipe.db -c judge.toml --json",
            "substitution": f"{run} <(cat in.jsonl) --db sub.db -c judge.toml --json",
        }
        procs = {name: subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env(),
                                      capture_output=True, text=True, timeout=300)
                 for name, cmd in commands.items()}
        splits = len(server.calls("split"))
    for name, proc in procs.items():
        assert proc.returncode == 0, (name, proc.stderr)
        summary = json.loads(proc.stdout)
        assert summary["answers"] == 3 and summary["claims"] == 3, name
    assert splits == 6  # each run judged its three answers (two stores: no call shared)
