"""How a model call fails: no valid output (:class:`CallFailed`), no stored output to replay
(:class:`ReplayMiss`), or the whole run must stop (:class:`RunStopped`)."""

from __future__ import annotations

from typing import Any, NoReturn

from judge.errors import JudgeError


class CallFailed(RuntimeError):
    """A model call that produced no valid output (after bounded retries)."""

    def __init__(self, message: str, call_id: str) -> None:
        super().__init__(message)
        self.call_id = call_id


class ReplayMiss(RuntimeError):
    """Replay needed a model output that is not in the store."""


class RunStopped(JudgeError, RuntimeError):
    """The run must stop now (the provider keeps failing, or a budget is spent). Raised out of
    the pipeline, never turned into a verdict: what was not finished is judged on resume.
    ``summary`` is the stopped run's summary and ``results`` what finished, once the runner
    has recorded them (:func:`judge.judge_answers` raises it so)."""

    def __init__(self, message: str, summary: Any = None, results: Any = None) -> None:
        super().__init__(message)
        self.summary = summary
        self.results = results


def replay_failure(stored: dict[str, Any] | None, call_id: str, purpose: str) -> NoReturn:
    """Replaying, a call not answered from the store: its stored error, else a miss."""
    if stored and stored["error"]:
        raise CallFailed(stored["error"], call_id)
    raise ReplayMiss(f"no stored output for {purpose} call {call_id}")
