"""The options of one judging call (:func:`judge.judge_answers`, :func:`judge.judge_file`):
the public :class:`JudgeOptions` (keyword arguments, all optional) and the same with every
default filled in (:class:`ResolvedOptions`), which :mod:`judge.api` passes on to the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from judge.models.budget import Limits
from judge.runs.batch import Progress
from judge.runs.deferred import BatchMode
from judge.runs.executors import ExecutorName

OnError = Literal["raise", "skip"]


class JudgeOptions(TypedDict, total=False):
    """The options :func:`judge_answers` and :func:`judge_file` share (keyword arguments)."""

    #: answers judged at once (overrides the config's ``concurrency``, 1 to 64)
    concurrency: int | None
    #: what invalid input does: ``"raise"`` (default of ``judge_answers``) or ``"skip"``
    #: (default of ``judge_file``)
    on_error: OnError
    #: ``progress(done, total)``, called as answers are stored
    progress: Progress | None
    #: judge again the stored answers whose verdicts include a ``judge_error``
    retry_errors: bool
    #: budgets of this call (calls served from the store are free); USD for ``max_cost``
    max_calls: int | None
    max_tokens: int | None
    max_cost: float | None
    #: ``"local"`` (this process) or ``"ray"`` (``workers`` Ray workers at ``ray_address``)
    executor: ExecutorName
    ray_address: str | None
    workers: int | None
    #: send the calls in batches: a provider's batch API or a ``vllm run-batch`` file
    #: (:class:`judge.BatchMode`); None: online, one call at a time
    batch: BatchMode | None


@dataclass(frozen=True)
class ResolvedOptions:
    """:class:`JudgeOptions` with every default filled in."""

    on_error: OnError
    concurrency: int | None = None
    progress: Progress | None = None
    retry_errors: bool = False
    limits: Limits = Limits()
    spread: Spread = field(default_factory=lambda: Spread())
    batch: BatchMode | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any], on_error: OnError) -> ResolvedOptions:
        unknown = sorted(set(options) - set(JudgeOptions.__annotations__))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        o = dict(options)
        return cls(
            on_error=o.get("on_error", on_error), concurrency=o.get("concurrency"),
            progress=o.get("progress"), retry_errors=o.get("retry_errors", False),
            limits=Limits(o.get("max_calls"), o.get("max_tokens"), o.get("max_cost")),
            spread=Spread(o.get("executor", "local"), o.get("ray_address"), o.get("workers")),
            batch=o.get("batch"),
        )


@dataclass(frozen=True)
class Spread:
    """Where the answers are judged (see :func:`judge.judge_answers`)."""

    executor: ExecutorName = "local"
    ray_address: str | None = None
    workers: int | None = None
