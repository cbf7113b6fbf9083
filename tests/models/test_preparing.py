"""litellm's preparation of a request (its synchronous ``completion()``) runs on the event
loop's thread for an OpenAI-compatible endpoint, on a worker thread for other providers; only
the first submission of a marked attempt is taken off the worker threads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import litellm
import litellm.main
import pytest

import judge
from judge.config import JudgeConfig
from judge.models.preparing import on_loop, prepares_on_loop
from judge.runs.loop import run_sync
from tests.conftest import FAKE_MODEL
from tests.faults.harness import RECORDS
from tests.support.openai_server import OpenAIServer


def test_only_openai_compatible_models_are_prepared_on_the_loop() -> None:
    assert prepares_on_loop("openai/gpt-4.1-mini")
    assert prepares_on_loop("openai/Qwen2.5-7B", "http://127.0.0.1:8000/v1")
    assert not prepares_on_loop("anthropic/claude-3-5-sonnet-20241022")
    assert not prepares_on_loop("vertex_ai/gemini-1.5-pro")
    assert not prepares_on_loop("no-such-provider-here")


def _thread() -> str:
    return threading.current_thread().name


async def _three_submissions(marked: bool) -> list[str]:
    loop = asyncio.get_running_loop()
    with on_loop(marked):
        first = await loop.run_in_executor(None, _thread)
        second = await loop.run_in_executor(None, _thread)
    third = await loop.run_in_executor(None, _thread)
    return [first, second, third]


def test_a_marked_attempt_runs_its_first_submission_on_the_loop_thread() -> None:
    here = _thread()
    first, second, third = run_sync(_three_submissions(marked=True))
    assert first == here
    assert second != here and third != here  # a DNS lookup, the next attempt: worker threads
    assert all(name != here for name in run_sync(_three_submissions(marked=False)))


def test_an_error_raised_while_preparing_on_the_loop_reaches_the_caller() -> None:
    def refuse() -> None:
        raise ValueError("bad request")

    async def attempt() -> None:
        with on_loop():
            await asyncio.get_running_loop().run_in_executor(None, refuse)

    with pytest.raises(ValueError, match="bad request"):
        run_sync(attempt())


def test_a_request_prepared_on_the_loop_is_sent_without_a_turn_of_the_loop() -> None:
    """The future of a marked attempt's preparation is done when handed back: the task goes
    on at once (to send its request) instead of letting every other ready task go first,
    which kept answers whose responses came back together in step."""

    async def both() -> list[str]:
        loop = asyncio.get_running_loop()
        order: list[str] = []

        async def sending() -> None:
            with on_loop():
                prepared = loop.run_in_executor(None, lambda: order.append("prepared"))
                assert prepared.done()
                await prepared
            order.append("sent")

        async def other() -> None:
            order.append("other")

        await asyncio.gather(asyncio.ensure_future(sending()), asyncio.ensure_future(other()))
        return order

    assert run_sync(both()) == ["prepared", "sent", "other"]


@pytest.fixture
def preparing_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread each litellm ``completion()`` of a run ran on (the real one, watched)."""
    seen: list[str] = []
    real = litellm.main.completion

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm.main, "completion", watched)
    return seen


def test_a_run_against_an_openai_compatible_server_prepares_every_call_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preparing_threads: list[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url,
                             strategy="batch", concurrency=2)
        results = judge.judge_answers(RECORDS, config=config, db=tmp_path / "j.db")
    labels = [v.label for r in results for v in r.verdicts]
    assert labels == ["supported"] * 3
    assert len(preparing_threads) == results.summary.model_calls >= 4
    assert set(preparing_threads) == {_thread()}


def test_a_run_with_another_provider_keeps_the_worker_thread(
    tmp_path: Path, fake_llm: Any, preparing_threads: list[str],
) -> None:
    config = JudgeConfig(model=FAKE_MODEL, strategy="batch")
    results = judge.judge_answers(RECORDS, config=config, db=tmp_path / "j.db")
    assert results.summary.model_calls >= 4
    assert preparing_threads and _thread() not in preparing_threads
