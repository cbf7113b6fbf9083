"""Every model fault fails closed, end to end: the CLI in a subprocess against a real HTTP server
that misbehaves on purpose (see :mod:`tests.faults.harness` for the matrix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.harness import SCENARIOS, Outcome, failed_closed, recovered, run_scenarios


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    base: Path = tmp_path_factory.mktemp("faults")
    return {o.scenario.name: o for o in run_scenarios(base)}


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_the_fault_fails_closed_with_bounded_recorded_attempts(
    outcomes: dict[str, Outcome], name: str
) -> None:
    outcome = outcomes[name]
    assert failed_closed(outcome) == [], outcome.stderr[-2000:]


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_retry_errors_after_recovery_leaves_no_judge_error(
    outcomes: dict[str, Outcome], name: str
) -> None:
    assert recovered(outcomes[name]) == []


def test_only_what_failed_is_called_again(outcomes: dict[str, Outcome]) -> None:
    # the recovery re-makes the failed calls only: a2 of http_500 was fine, its calls are reused
    assert outcomes["http_500"].recovery_requests == 2  # split and verify of a1
    assert outcomes["conflicting_judgements"].recovery_requests == 1  # verify of a1 again
    assert outcomes["impossible_logprobs"].recovery_requests == 3  # the three choice calls
    assert outcomes["dropped_sentences"].recovery_requests == 0  # nothing was a judge_error
    assert outcomes["one_call_http_500"].recovery_requests == 1  # a1's one call
    assert outcomes["one_call_dropped_sentences"].recovery_requests == 0


def test_one_call_verifies_the_sentence_it_dropped_in_a_second_call(
    outcomes: dict[str, Outcome]
) -> None:
    kinds = [r["kind"] for r in outcomes["one_call_dropped_sentences"].requests]
    assert kinds == ["judge", "verify", "judge"]  # a1: its call, then the dropped sentence; a2
