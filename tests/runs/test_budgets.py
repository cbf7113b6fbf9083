"""Budgets buy verdicts (#52): at ``-j 8`` an answer starts only when its expected cost fits
the budget, so a budget covering a few answers finishes some instead of spending itself on
the splits of answers that can never be verified; the summary says about how much more would
finish the rest, and the resume loses and repeats nothing."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import judge
from judge.config import JudgeConfig
from judge.models.accounting import CallStats
from judge.models.budget import Budget, Limits, Spend
from judge.models.client import ModelClient, RunStopped
from judge.pipeline import Pipeline
from judge.records import AnswerRecord
from judge.runs.budgets import AnswerBudget, prior_of
from tests.fakes import FakeLLM, install, rule_responder


def _records(n: int = 10) -> list[dict[str, Any]]:
    """Answers of four sentences with a longer source: a split and a verify call each."""
    out = []
    for i in range(n):
        sentences = [f"Box {i} item {k} is red and weighs {k + 3} kilograms [S1]."
                     for k in range(4)]
        source = " ".join(s.replace(" [S1]", "") for s in sentences) + " Filler." * 60
        out.append({"id": f"r{i}", "generator": "openai/gpt-4o", "answer": " ".join(sentences),
                    "sources": [{"id": "S1", "text": source}]})
    return out


@pytest.fixture
def slow_fake() -> FakeLLM:
    """The scripted provider answering after 20 ms without blocking: calls overlap."""
    return install(FakeLLM(responder=rule_responder, async_latency_s=0.02))


def _config(concurrency: int) -> JudgeConfig:
    return JudgeConfig(model="fake/judge-model", retries=1, timeout_s=30, strategy="batch",
                       signals=False, concurrency=concurrency)


def _run(db: Path, concurrency: int, **budget: Any) -> Any:
    try:
        return judge.judge_answers(_records(), config=_config(concurrency), db=db,
                                   **budget).summary
    except RunStopped as stopped:
        return stopped.summary


def test_a_token_budget_at_j8_finishes_answers_and_says_what_the_rest_needs(
    slow_fake: FakeLLM, tmp_path: Path
) -> None:
    summary = _run(tmp_path / "j.db", 8, max_tokens=8000)
    used = summary.prompt_tokens + summary.completion_tokens
    assert used <= 8000
    assert summary.answers_judged_now >= 1  # was 0: every answer split, none verified
    assert summary.exit_code == 4 and summary.pending == 10 - summary.answers_judged_now
    # at most one answer was started that could not finish (its split, by a call that
    # reserves its whole output and did not fit at the end)
    assert summary.model_calls <= 2 * summary.answers_judged_now + 1
    match = re.search(r"budget reached: (\d+) of 10 answers finished; about ([\d,]+) more "
                      r"tokens would finish the rest", summary.stopped)
    assert match, summary.stopped
    assert int(match.group(1)) == summary.answers_judged_now
    more = int(match.group(2).replace(",", ""))
    assert more == summary.budget_to_finish["tokens"]
    per_answer = used / summary.model_calls * 2  # a split and a verify call an answer
    assert 0.5 * per_answer * summary.pending <= more <= 2 * per_answer * summary.pending
    assert f"{used} of 8000 tokens (max_tokens)" in summary.stopped


def test_the_same_budget_finishes_about_as_many_answers_at_j1_and_j8(
    slow_fake: FakeLLM, tmp_path: Path
) -> None:
    one = _run(tmp_path / "one.db", 1, max_tokens=12_000)
    eight = _run(tmp_path / "eight.db", 8, max_tokens=12_000)
    assert one.answers_judged_now >= 3
    assert abs(eight.answers_judged_now - one.answers_judged_now) <= 1


def test_a_calls_budget_is_spent_on_answers_that_finish(
    slow_fake: FakeLLM, tmp_path: Path
) -> None:
    summary = _run(tmp_path / "calls.db", 8, max_calls=5)
    assert summary.answers_judged_now == 2 and summary.model_calls == 4
    assert "2 of 10 answers finished; about 16 more model calls" in summary.stopped
    assert summary.budget_to_finish == {"calls": 16}


def test_the_resume_loses_and_repeats_nothing(slow_fake: FakeLLM, tmp_path: Path) -> None:
    db = tmp_path / "resume.db"
    first = _run(db, 8, max_tokens=8000)
    assert first.pending
    sent_first = len(slow_fake.calls)
    second = _run(db, 8)
    assert second.pending == 0 and second.answers == 10 and not second.stopped
    assert second.answers_from_store == first.answers_judged_now
    assert second.answers_judged_now == first.pending
    # a call made by the stopped run (a split whose answer did not finish) is not made again
    sent = [str(c["messages"]) for c in slow_fake.calls]
    assert len(sent) == len(set(sent)) and len(sent) > sent_first
    with sqlite3.connect(db) as conn:
        per_answer = Counter(a for (a,) in conn.execute("select answer_id from verdicts"))
        judged = conn.execute("select count(*) from run_answers where status = 'judged'")
        rows = judged.fetchone()[0]
    # each answer's four claims once, and each answer once in the run
    assert len(per_answer) == 10 and set(per_answer.values()) == {4} and rows == 10


def _budget(**limits: Any) -> Budget:
    return Budget(Limits(**limits), CallStats(), "fake/judge-model")


def test_the_expected_cost_is_the_prior_scaled_by_what_finished_answers_spent() -> None:
    budget = _budget(max_tokens=10_000)
    allowance = AnswerBudget(budget, lambda r: Spend(2, len(r.answer) * 100, 0.0))
    record = AnswerRecord.model_validate({"answer": "x" * 10, "sources": [{"id": "S", "text": "t"}]})

    async def scenario() -> None:
        share = await allowance.admit(record)
        assert share is not None and allowance.expected(share.prior).tokens == 1000
        share.spent.add(Spend(2, 500, 0.0))  # it cost half its prior
        budget.stats.prompt_tokens += 500
        allowance.done(share, finished=True)
        assert allowance.expected(Spend(2, 3000, 0.0)).tokens == 1500

    asyncio.run(scenario())


def test_an_answer_waits_for_the_answers_in_flight_and_the_run_stops_when_none_fits() -> None:
    budget = _budget(max_tokens=2500)
    allowance = AnswerBudget(budget, lambda r: Spend(2, 1000, 0.0))
    record = AnswerRecord.model_validate({"answer": "a", "sources": [{"id": "S", "text": "t"}]})

    async def scenario() -> None:
        first = await allowance.admit(record)
        second = await allowance.admit(record)
        assert first is not None and second is not None
        third = asyncio.ensure_future(allowance.admit(record))
        await asyncio.sleep(0.01)
        assert not third.done()  # 1000 + 1000 held, 1000 more does not fit 2500
        for share in (first, second):
            share.spent.add(Spend(2, 1000, 0.0))
            budget.stats.prompt_tokens += 1000
            allowance.done(share, finished=True)
        assert await third is None  # 2000 spent, none in flight: 1000 more does not fit
        assert allowance.stopped_by == "tokens"
        message = allowance.message([record, record], answers=4)
        assert message and message.startswith(
            "budget reached: 2 of 4 answers finished; about 2,000 more tokens")

    asyncio.run(scenario())


def test_the_first_answer_starts_whatever_its_prior_says() -> None:
    # the prior is a guess: with nothing in flight and nothing finished, the answer starts
    # (the calls' own reservations still keep the budget)
    allowance = AnswerBudget(_budget(max_tokens=100), lambda r: Spend(2, 5000, 0.0))
    record = AnswerRecord.model_validate({"answer": "a", "sources": [{"id": "S", "text": "t"}]})
    assert asyncio.run(allowance.admit(record)) is not None


def test_the_prior_grows_with_the_answer_and_the_sources_and_counts_the_calls() -> None:
    prior = prior_of(Pipeline(_config(1), ModelClient(_config(1), None)), _budget(max_tokens=1))
    small = AnswerRecord.model_validate(_records(1)[0])
    longer = small.model_copy(update={"sources": [
        small.sources[0].model_copy(update={"text": small.sources[0].text * 4})]})
    assert prior(small).calls == 2  # a split and one verify call (batch)
    assert prior(longer).tokens > prior(small).tokens
    given = small.model_copy(update={"claims": [{"text": "Box 0 item 0 is red."}]})
    assert prior(given).calls == 1 and prior(given).tokens < prior(small).tokens
    scores = JudgeConfig(model="fake/judge-model", strategy="scores",
                         prompts={"split_claims": "v2", "choose_label": "v1"})
    per_claim = prior_of(Pipeline(scores, ModelClient(scores, None)), _budget(max_tokens=1))
    assert per_claim(small).calls == 1 + 4
