"""Where a run's answers are judged: in this process (``local``, the default) or spread over
Ray workers (``ray``, :mod:`judge.runs.ray_executor`). Either way the runner alone writes the
store, so resuming, the 0-call re-run and ``kill -9`` safety do not depend on the executor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from judge.config import JudgeConfig
    from judge.models.client import CallStats
    from judge.pipeline import JudgedAnswer, Pipeline
    from judge.records import AnswerRecord
    from judge.store.buffer import WriteBuffer

ExecutorName = Literal["local", "ray"]


class Executor(Protocol):
    #: answers judged at once
    capacity: int

    async def judge(
        self, record: AnswerRecord, run_id: str, buffer: WriteBuffer, domain: str | None = None
    ) -> JudgedAnswer: ...

    def stats(self) -> CallStats: ...

    def close(self) -> None: ...


class LocalExecutor:
    """The run's own pipeline, ``concurrency`` answers at once."""

    def __init__(self, pipeline: Pipeline, config: JudgeConfig) -> None:
        self.pipeline = pipeline
        self.capacity = config.concurrency

    async def judge(
        self, record: AnswerRecord, run_id: str, buffer: WriteBuffer, domain: str | None = None
    ) -> JudgedAnswer:
        return await self.pipeline.judge(record, run_id, domain)

    def stats(self) -> CallStats:
        return self.pipeline.client.stats

    def close(self) -> None:
        pass
