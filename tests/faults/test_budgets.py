"""Budgets are promises at any concurrency: ``judge run`` in a subprocess against the real HTTP
fault server, eight answers in flight, a slow provider (so calls overlap). A budget is reserved
before a call is sent and reconciled after it: the server never sees more calls, tokens or cost
than the budget, and the stop message gives the summary's numbers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.faults.harness import box_records, judge_cmd, launch_all, write_config, write_records
from tests.support.openai_server import OpenAIServer


def _records() -> list[dict[str, Any]]:
    # another family than every judge model below (no self-grading refusal)
    return [{**r, "generator": "anthropic/claude-3-haiku"} for r in box_records(8)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cases = {
        "calls": ("openai/fake-judge", ("--max-calls", "3")),
        "tokens": ("openai/fake-judge", ("--max-tokens", "2000")),
        "cost": ("openai/gpt-4o-mini", ("--max-cost", "0.0008")),
        "unpriced_cost": ("openai/fake-judge", ("--max-cost", "0.003")),
        "tokens_8000": ("openai/fake-judge", ("--max-tokens", "8000")),
        "smaller_than_a_call": ("openai/fake-judge", ("--max-tokens", "60")),
    }
    servers, commands = {}, []
    try:
        for name, (model, flags) in cases.items():
            server = OpenAIServer().start()
            server.latency_s = 0.3
            servers[name] = server
            work = tmp_path_factory.mktemp(name)
            write_records(work / "in.jsonl", _records())
            write_config(work / "judge.toml", server.base_url, model=model, concurrency=8,
                         max_tokens=256)
            commands.append((judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c",
                                       "judge.toml", "--json", *flags), work))
        procs = launch_all(commands)
        return {name: (proc, servers[name].calls())
                for name, proc in zip(cases, procs, strict=True)}
    finally:
        for server in servers.values():
            server.stop()


def _summary(proc: Any, code: int = 4) -> dict[str, Any]:
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_max_calls_3_makes_at_most_3_calls_with_8_answers_in_flight(
    runs: dict[str, Any]
) -> None:
    proc, requests = runs["calls"]
    summary = _summary(proc)
    assert len(requests) == summary["model_calls"] <= 3
    assert f"{summary['model_calls']} of 3 model calls (max_calls)" in summary["stopped"]
    # an answer starts only when its calls fit: none is spent on an answer left unfinished
    assert summary["answers_judged_now"] >= 1 and summary["pending"] >= 1
    assert summary["model_calls"] % summary["answers_judged_now"] == 0
    assert f"{summary['answers_judged_now']} of 8 answers finished" in summary["stopped"]


def test_max_tokens_is_never_exceeded_and_the_message_gives_the_summary_numbers(
    runs: dict[str, Any]
) -> None:
    proc, requests = runs["tokens"]
    summary = _summary(proc)
    used = summary["prompt_tokens"] + summary["completion_tokens"]
    assert 0 < used <= 2000 and len(requests) == summary["model_calls"]
    assert f"{used} of 2000 tokens (max_tokens)" in summary["stopped"]


def test_max_cost_is_never_exceeded(runs: dict[str, Any]) -> None:
    proc, requests = runs["cost"]
    summary = _summary(proc)
    assert 0 < summary["cost"] <= 0.0008 and len(requests) == summary["model_calls"] >= 1
    assert f"${summary['cost']:.6f} of $0.0008 (max_cost)" in summary["stopped"]


def test_a_cost_budget_without_a_price_stops_before_any_call(runs: dict[str, Any]) -> None:
    proc, requests = runs["unpriced_cost"]
    summary = _summary(proc)
    assert requests == [] and summary["model_calls"] == 0
    assert "knows no price" in summary["stopped"]


def test_eight_answers_in_flight_spend_the_budget_on_answers_that_finish(
    runs: dict[str, Any]
) -> None:
    # eight answers may be in flight, but one starts only when its expected cost fits beside
    # what the others are still expected to spend; the run stops when the next does not fit
    proc, requests = runs["tokens_8000"]
    summary = _summary(proc)
    used = summary["prompt_tokens"] + summary["completion_tokens"]
    finished = summary["answers_judged_now"]
    assert finished >= 1 and len(requests) == summary["model_calls"]
    assert used <= 8000 < used + 2 * used / finished, summary["stopped"]
    more = re.search(rf"budget reached: {finished} of 8 answers finished; about ([\d,]+) more "
                     r"tokens would finish the rest", summary["stopped"])
    assert more and int(more.group(1).replace(",", "")) == summary["budget_to_finish"]["tokens"]


def test_a_budget_smaller_than_one_call_is_a_usage_error_that_says_so(
    runs: dict[str, Any]
) -> None:
    proc, requests = runs["smaller_than_a_call"]
    summary = _summary(proc, code=64)
    assert requests == [] and summary["model_calls"] == 0
    assert "--max-tokens 60 is smaller than one call" in summary["stopped"]
    assert "raise --max-tokens to at least" in summary["stopped"]
