"""The fault matrix: a real OpenAI-compatible server on 127.0.0.1 misbehaving on purpose, the real
``python -m judge run`` in a subprocess against it, and the checks that the judge failed closed.

Each :class:`Scenario` queues faults on its own server, runs the CLI on two answers whose claims
are all ``supported`` when nothing goes wrong, and states what must follow: which claims the fault
hits (each must be a ``judge_error`` or flagged for review, never a silent ``supported``), which
kind of call it hits and how many HTTP attempts that call may take (recorded in
``call_attempts`` and counted by the server), and the documented exit code. Then the fault is
cleared and ``--retry-errors`` (or, for a stopped run, the same command) must leave no
``judge_error``.

Used by ``tests/faults/test_faults.py`` and by ``python -m tests.faults.report`` (the counts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.store import Store
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]

#: Two answers whose three claims are supported, cited and found verbatim: with no fault,
#: every verdict is supported and unflagged.
RECORDS: list[dict[str, Any]] = [
    {"id": "a1", "generator": "openai/gpt-4o",
     "answer": "Paris is the capital of France [S1]. The Seine flows through Paris [S1].",
     "sources": [{"id": "S1", "text": "Paris is the capital of France. The Seine flows "
                                      "through Paris."}]},
    {"id": "a2", "generator": "openai/gpt-4o",
     "answer": "Berlin is the capital of Germany [S1].",
     "sources": [{"id": "S1", "text": "Berlin is the capital of Germany."}]},
]
A1 = ("Paris is the capital of France.", "The Seine flows through Paris.")
A2 = ("Berlin is the capital of Germany.",)

#: what the "rewrite" fault makes of every claim of a split
REWRITTEN = "The moon is made of green cheese."

#: Operational settings of every scenario: two retries, one re-ask, a short timeout.
BASE = {"retries": 2, "reasks": 1, "backoff_s": 0.05, "timeout_s": 1.0, "breaker_after": 5,
        "concurrency": 1}
SCORES = {"strategy": "scores", "prompts": {"split_claims": "v2", "choose_label": "v1"}}
#: split and verify in one call (judge.decide.one_call)
ONE_CALL = {"one_call": True}


@dataclass(frozen=True)
class Scenario:
    name: str
    #: keyword arguments of OpenAIServer.fault, queued in order
    faults: tuple[dict[str, Any], ...]
    exit_code: int
    #: texts of the claims the fault hits: each must be judge_error or flagged
    affected: tuple[str, ...]
    #: the kind of call the fault hits, and the HTTP attempts that call takes (the bound)
    kind: str
    attempts: int
    options: dict[str, Any] = field(default_factory=dict)
    cli: tuple[str, ...] = ()
    #: answers the fault leaves unjudged (a stopped run)
    pending: tuple[str, ...] = ()
    #: the checks: claims hit become judge_error (else: flagged), and this review reason
    error: bool = True
    reason: str | None = None


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("http_500", ({"kind": "status", "status": 500, "times": 3, "only": "split"},),
             3, A1, "split", 3),
    Scenario("http_429_retry_after",
             ({"kind": "status", "status": 429, "retry_after": 1, "times": 3,
               "only": "verify"},), 3, A1, "verify", 3),
    Scenario("hang", ({"kind": "hang", "seconds": 3, "times": 3, "only": "split"},),
             3, A1, "split", 3),
    Scenario("malformed_json", ({"kind": "malformed", "times": 3, "only": "verify"},),
             3, A1, "verify", 3),
    Scenario("truncated_json", ({"kind": "truncated", "times": 1, "only": "verify"},),
             3, A1, "verify", 1),
    Scenario("wrong_schema", ({"kind": "content", "content": '{"judgements": "none"}',
                               "times": 2, "only": "verify"},), 3, A1, "verify", 2),
    Scenario("empty_split", ({"kind": "content", "content": '{"claims": []}',
                              "only": "split"},), 3, (), "split", 1),
    Scenario("dropped_sentences", ({"kind": "drop", "keep": 1, "only": "split"},),
             0, A1[1:], "split", 1, error=False, reason="uncovered_sentence"),
    Scenario("conflicting_judgements", ({"kind": "conflict", "only": "verify"},),
             3, A1, "verify", 1),
    Scenario("impossible_logprobs",
             ({"kind": "logprobs", "top": {"A": 0.5, "B": -1.0, "C": -2.0, "D": -3.0},
               "times": 0, "only": "choice"},), 3, A1 + A2, "choice", 1, options=SCORES),
    Scenario("nan_logprobs",
             ({"kind": "logprobs", "top": {"A": float("nan"), "B": -1.0, "C": -2.0,
                                            "D": -3.0}, "times": 0, "only": "choice"},),
             3, A1 + A2, "choice", 1, options=SCORES),
    Scenario("infinite_logprobs",
             ({"kind": "logprobs", "top": {"A": float("inf"), "B": -1.0, "C": -2.0,
                                            "D": -3.0}, "times": 0, "only": "choice"},),
             3, A1 + A2, "choice", 1, options=SCORES),
    Scenario("logprob_variants_over_one",  # "A", " A", "a", "B": 0.82 + 0.74 + 0.61 + 0.05
             ({"kind": "logprobs", "top": {"A": -0.2, " A": -0.3, "a": -0.5, "B": -3.0},
               "times": 0, "only": "choice"},), 3, A1 + A2, "choice", 1, options=SCORES),
    Scenario("other_model", ({"kind": "model", "model": "anthropic/claude-3-5-sonnet",
                              "times": 0},), 0, A1 + A2, "split", 1, error=False,
             reason="model_mismatch"),
    Scenario("one_call_http_500", ({"kind": "status", "status": 500, "times": 3,
                                     "only": "judge"},), 3, A1, "judge", 3, options=ONE_CALL),
    Scenario("one_call_wrong_schema", ({"kind": "content", "content": '{"claims": "none"}',
                                        "times": 2, "only": "judge"},), 3, A1, "judge", 2,
             options=ONE_CALL),
    Scenario("one_call_truncated", ({"kind": "truncated", "times": 1, "only": "judge"},),
             3, A1, "judge", 1, options=ONE_CALL),
    Scenario("one_call_dropped_sentences", ({"kind": "drop", "keep": 1, "only": "judge"},),
             0, A1[1:], "judge", 1, error=False, reason="uncovered_sentence",
             options=ONE_CALL),
    Scenario("one_call_conflicting_judgements", ({"kind": "conflict", "only": "judge"},),
             3, A1, "judge", 1, options=ONE_CALL),
    # a sentence that states a fact skipped as "advice": judged as it stands and flagged
    Scenario("skipped_checkable_sentence",
             ({"kind": "skip", "sentence": 2, "reason": "advice", "only": "split"},),
             0, A1[1:], "split", 1, error=False, reason="uncovered_sentence",
             options={"prompts": {"split_claims": "v2", "verify_claims": "v2"}}),
    Scenario("one_call_skipped_checkable_sentence",
             ({"kind": "skip", "sentence": 2, "reason": "filler", "only": "judge"},),
             0, A1[1:], "judge", 1, error=False, reason="uncovered_sentence",
             options=ONE_CALL),
    # claims that are not their sentences' words: judge_error, never judged
    Scenario("rewritten_claims", ({"kind": "rewrite", "text": REWRITTEN, "only": "split"},),
             3, (REWRITTEN,), "split", 1),
    Scenario("one_call_rewritten_claims",
             ({"kind": "rewrite", "text": REWRITTEN, "only": "judge"},), 3, (REWRITTEN,),
             "judge", 1, options=ONE_CALL),
    # a pinned split_claims v1 that drops a sentence: the sentence is judged and flagged
    Scenario("v1_dropped_sentences", ({"kind": "drop", "keep": 1, "only": "split"},),
             0, A1[1:], "split", 1, error=False, reason="uncovered_sentence",
             options={"prompts": {"split_claims": "v1", "verify_claims": "v2"}}),
    Scenario("outage_breaker", ({"kind": "status", "status": 503, "times": 0},),
             4, A1, "split", 3, options={"breaker_after": 2}, pending=("a2",)),
    Scenario("budget", (), 4, (), "split", 1, cli=("--max-calls", "1"), pending=("a1", "a2"),
             error=False),
)


@dataclass
class Outcome:
    """What one scenario did: the CLI's exit code and output, the server's requests, the store,
    and the same after recovery."""

    scenario: Scenario
    workdir: Path
    returncode: int = -1
    stdout: str = ""
    stderr: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: the store right after the faulty run: verdict rows, and HTTP attempts per call
    rows: list[dict[str, Any]] = field(default_factory=list)
    attempts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    recovered_code: int | None = None
    recovered_errors: int | None = None
    recovery_requests: int = 0

    @property
    def db(self) -> Path:
        return self.workdir / "judge.db"

    def summary(self) -> dict[str, Any]:
        try:
            return json.loads(self.stdout)  # type: ignore[no-any-return]
        except ValueError:
            return {}


def env() -> dict[str, str]:
    """The environment of a ``python -m judge`` subprocess: this checkout first on the path."""
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1"}


def judge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "judge", *args]


def write_config(path: Path, base_url: str, **options: Any) -> Path:
    settings = {"model": "openai/fake-judge", "strategy": "batch", "api_base": base_url,
                **BASE, **options}
    lines = ["[judge]"]
    for key, value in settings.items():
        lines.append(f"{key} = {_toml(value)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def write_records(path: Path, records: Sequence[dict[str, Any]] = RECORDS) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


#: Scenario runs at a time: each is a CLI process whose start-up takes seconds of CPU, and the
#: scenarios' servers must answer within their 1 s timeout; all 27 at once on two cores
#: starved the servers into timeouts that consumed the faults (a flaky run, not a finding).
SCENARIOS_AT_ONCE = max(2, 2 * (os.cpu_count() or 1))


def launch_all(commands: list[tuple[list[str], Path]], timeout: float = 300,
               at_once: int | None = None) -> list[subprocess.CompletedProcess[str]]:
    """Run commands (argv, cwd) concurrently, at most ``at_once`` at a time (``None``: all
    together); their completed processes, in order."""
    done: list[subprocess.CompletedProcess[str]] = []
    width = at_once or max(1, len(commands))
    for start in range(0, len(commands), width):
        batch = commands[start:start + width]
        procs = [subprocess.Popen(argv, cwd=cwd, env=env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for argv, cwd in batch]
        for proc, (argv, _) in zip(procs, batch, strict=True):
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
    return done


#: Scenarios whose recovery also goes through the CLI in a subprocess (the others recover
#: through judge.api.judge_file(retry_errors=True), the same code path without the start-up
#: cost of a process).
CLI_RECOVERY = ("outage_breaker", "budget")


def run_scenarios(base: Path, scenarios: Sequence[Scenario] = SCENARIOS) -> list[Outcome]:
    """Every scenario against its own server, the CLI runs concurrently; then each recovers
    (faults cleared; ``--retry-errors``, which also resumes a stopped run)."""
    servers, outcomes, commands = [], [], []
    try:
        for scenario in scenarios:
            server = OpenAIServer().start()
            servers.append(server)
            work = base / scenario.name
            work.mkdir(parents=True, exist_ok=True)
            write_records(work / "in.jsonl")
            write_config(work / "judge.toml", server.base_url, **scenario.options)
            for fault in scenario.faults:
                server.fault(**fault)
            outcomes.append(Outcome(scenario, work))
            commands.append((judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c", "judge.toml",
                                       "--json", *scenario.cli), work))
        for outcome, proc in zip(outcomes, launch_all(commands, at_once=SCENARIOS_AT_ONCE),
                                 strict=True):
            outcome.returncode, outcome.stdout, outcome.stderr = (
                proc.returncode, proc.stdout, proc.stderr)
        for outcome, server in zip(outcomes, servers, strict=True):
            outcome.requests = server.calls()
            outcome.rows, outcome.attempts = snapshot(outcome.db)
            server.clear()
        by_cli = [o for o in outcomes if o.scenario.name in CLI_RECOVERY]
        procs = launch_all([(judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c",
                                       "judge.toml", "--json", "--retry-errors"), o.workdir)
                            for o in by_cli], at_once=SCENARIOS_AT_ONCE)
        for outcome, proc in zip(by_cli, procs, strict=True):
            outcome.recovered_code = proc.returncode
            outcome.recovered_errors = (json.loads(proc.stdout).get("judge_errors")
                                        if proc.stdout.strip().startswith("{") else None)
        for outcome in outcomes:
            if outcome.scenario.name not in CLI_RECOVERY:
                outcome.recovered_code, outcome.recovered_errors = recover_in_process(outcome)
        for outcome, server in zip(outcomes, servers, strict=True):
            outcome.recovery_requests = len(server.calls()) - len(outcome.requests)
    finally:
        for server in servers:
            server.stop()
    return outcomes


def recover_in_process(outcome: Outcome) -> tuple[int, int]:
    """``judge_file(..., retry_errors=True)``: (the CLI's exit code for it, judge errors)."""
    from judge.api import RunStopped, judge_file
    from judge.config import JudgeConfig

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    config = JudgeConfig.load(outcome.workdir / "judge.toml")
    try:
        summary = judge_file(outcome.workdir / "in.jsonl", config=config, db=outcome.db,
                             retry_errors=True).summary
    except RunStopped as exc:
        summary = exc.summary
    return summary.exit_code, summary.judge_errors


def snapshot(db: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The verdict rows and every call's HTTP attempts in a store."""
    store = Store.open(db)
    try:
        rows = list(store.verdict_rows())
        ids = [c["id"] for c in store.rows("select id from calls")]
        return rows, {cid: store.call_attempts(cid) for cid in ids}
    finally:
        store.close()


# -- the checks ---------------------------------------------------------------------------------


def current_rows(db: Path) -> list[dict[str, Any]]:
    """The store's current verdicts with their claims (the latest judge version)."""
    store = Store.open(db)
    try:
        return list(store.verdict_rows())
    finally:
        store.close()


def failed_closed(outcome: Outcome) -> list[str]:
    """Problems: an affected claim silently supported, a claim lost, an unbounded or unrecorded
    attempt, a wrong exit code. Empty: the scenario failed closed."""
    s, problems = outcome.scenario, []
    if outcome.returncode != s.exit_code:
        problems.append(f"exit code {outcome.returncode}, documented {s.exit_code}: "
                        f"{outcome.stderr[-300:]}")
    if "Traceback" in outcome.stderr:
        problems.append("a traceback was printed")
    rows = outcome.rows
    by_text = {r["claim"]: r for r in rows}
    for text in s.affected:
        row = by_text.get(text)
        if row is None:
            if not any(r["origin"] == "unsplit" and r["label"] == "judge_error" for r in rows):
                problems.append(f"claim {text!r} was neither judged nor a judge_error")
            continue
        if s.error and row["label"] != "judge_error":
            problems.append(f"claim {text!r} is {row['label']}, not judge_error")
        if not row["review"]:
            problems.append(f"claim {text!r} is {row['label']} and not flagged for review")
        if s.reason and s.reason not in row["review_reasons"]:
            problems.append(f"claim {text!r} lacks the review reason {s.reason}")
    if s.name == "empty_split":
        errors = [r for r in rows if r["answer_id"] == "a1"]
        if [r["label"] for r in errors] != ["judge_error"] or not errors[0]["review"]:
            problems.append("the empty split of a1 is not one judge_error for review")
    silent = [r["claim"] for r in rows if r["label"] == "supported" and not r["review"]
              and r["claim"] in s.affected]
    if silent:
        problems.append(f"silently supported: {silent}")
    problems += attempt_problems(outcome)
    summary = outcome.summary()
    if s.pending and summary.get("stopped") is None:
        problems.append("the run did not record why it stopped")
    if s.pending and summary.get("pending") != len(s.pending):
        problems.append(f"{summary.get('pending')} answers pending, expected {len(s.pending)}")
    return problems


def attempt_problems(outcome: Outcome) -> list[str]:
    """The faulty call took exactly the bounded number of HTTP attempts, each recorded in
    ``call_attempts``, and the server saw the same number."""
    s = outcome.scenario
    hit = [r for r in outcome.requests if r["kind"] == s.kind]
    if s.name == "budget":
        return [] if len(outcome.requests) == 1 else [
            f"{len(outcome.requests)} requests under --max-calls 1"]
    attempts = outcome.attempts
    problems = []
    bound = (BASE["retries"] + 1) * (BASE["reasks"] + 1)
    over = {cid: len(rows) for cid, rows in attempts.items() if len(rows) > bound}
    if over:
        problems.append(f"calls over the attempt bound {bound}: {over}")
    recorded = sum(len(rows) for rows in attempts.values())
    if recorded != len(outcome.requests):
        problems.append(f"{recorded} attempts recorded, the server saw {len(outcome.requests)}")
    faulty = [r for r in hit if r["fault"]]
    per_call = s.attempts
    if s.name not in ("outage_breaker",) and s.faults and s.faults[0].get("times", 1) != 0:
        if len(faulty) != per_call:
            problems.append(f"{len(faulty)} faulty {s.kind} requests, expected {per_call}")
    elif faulty and len(faulty) % per_call:
        problems.append(f"{len(faulty)} faulty requests is not a multiple of {per_call}")
    asked = [f.get("retry_after") for f in s.faults if f.get("retry_after")]
    if asked:  # Retry-After honoured: no try sooner than the provider asked
        times = [r["time"] for r in faulty]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        if any(gap < asked[0] * 0.9 for gap in gaps):
            problems.append(f"Retry-After {asked[0]} s not honoured: gaps {gaps}")
    return problems


def recovered(outcome: Outcome) -> list[str]:
    """After the fault is cleared, ``--retry-errors`` exits 0 and leaves no judge_error."""
    problems = []
    if outcome.recovered_code != 0:
        problems.append(f"recovery exit code {outcome.recovered_code}")
    errors = [r["claim"] for r in current_rows(outcome.db) if r["label"] == "judge_error"]
    if errors or outcome.recovered_errors:
        problems.append(f"judge_error left after recovery: {errors}")
    return problems


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


# -- SIGKILL and resume -------------------------------------------------------------------------


def box_records(n: int, colour: str = "red") -> list[dict[str, Any]]:
    """``n`` one-claim answers with distinct calls."""
    return [{"id": f"r{i}", "generator": "openai/gpt-4o",
             "answer": f"Box {i} is {colour} [S1].",
             "sources": [{"id": "S1", "text": f"Box {i} is {colour}."}]} for i in range(n)]


def stored_answers(db: Path) -> int:
    """Answers judged in a store (read while another process writes it)."""
    import sqlite3

    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return int(conn.execute("select count(distinct answer_id) from run_answers "
                                    "where status = 'judged'").fetchone()[0])
    except sqlite3.Error:
        return 0


@dataclass
class KillReport:
    kills: int = 0
    resumes: int = 0
    lost: int = 0
    duplicated: int = 0
    final_code: int = -1
    requests: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def kill_and_resume(work: Path, n: int, targets: Sequence[int], latency: float = 0.15
                    ) -> KillReport:
    """Judge ``n`` answers against a slow server, SIGKILL the run each time ``targets[i]``
    answers are stored, resume after each kill, and count what was lost or duplicated."""
    import signal
    from collections import Counter

    report = KillReport()
    with OpenAIServer() as server:
        server.latency_s = latency
        write_records(work / "in.jsonl", box_records(n))
        write_config(work / "judge.toml", server.base_url, concurrency=2)
        run = judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c", "judge.toml", "--json")
        db = work / "judge.db"
        for target in targets:
            proc = subprocess.Popen(run, cwd=work, env=env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            reached = wait_for(lambda t=target: stored_answers(db) >= t, timeout=120)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            if reached and proc.returncode == -signal.SIGKILL:
                report.kills += 1
        (final,) = launch_all([(run, work)])
        report.resumes = report.kills
        report.final_code = final.returncode
        report.requests = dict(Counter(r["kind"] for r in server.calls()))
    report.summary = json.loads(final.stdout) if final.stdout.strip() else {}
    store = Store.open(db)
    try:
        judged = store.count("select count(distinct answer_id) from run_answers")
        report.lost = n - judged
        # every answer has one claim: more claims or verdicts for an answer, or a second run
        # instead of the resumed one, is a duplicate
        report.duplicated = sum(
            store.count(f"select count(*) from {table}")
            - store.count(f"select count(distinct answer_id) from {table}")
            for table in ("answer_claims", "verdicts")
        ) + store.count("select count(*) from runs") - 1
    finally:
        store.close()
    return report
