"""A run whose model calls go out in batches (``judge run --batch-api`` or ``--batch-file``)
instead of one by one: :class:`BatchMode` says how, :class:`BatchQueue` collects the calls.

Every answer of the run is judged at once by the same pipeline as online; a call that is not
stored waits in the queue (:meth:`BatchQueue.send`) instead of going out. When every answer in
progress is waiting, the queue sends what it holds as one batch (the answers' splits first;
their verifications, which need the splits, are the next batch), stores each answer as the
online call would have stored it (:mod:`judge.models.batched`) and lets the answers go on.
How a batch is sent is the transport's: a provider's batch API through litellm
(:mod:`judge.runs.batch_jobs`) or a file for ``vllm run-batch`` (:mod:`judge.runs.batch_files`).

A request that fails in the batch (its error line, an expired or failed batch) becomes the
error of its call, hence ``judge_error`` claims, unless ``resend_online``: then it is made
online. When a batch is still running after ``wait_s``, or a transport has to stop, every call
still waiting raises :class:`~judge.models.failures.RunStopped`: the run stops cleanly and
running the same command again picks up where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from judge.models.batched import ONLINE, Outcome
from judge.models.budget import BudgetSpent, BudgetTooSmall, Reservation, prompt_estimate
from judge.models.failures import CallFailed, RunStopped
from judge.models.prompts import RenderedPrompt

if TYPE_CHECKING:
    from judge.models.client import ModelClient
    from judge.pipeline import JudgedAnswer
    from judge.records import AnswerRecord
    from judge.runs.executors import Executor
    from judge.store.buffer import WriteBuffer

#: A batch job's state as the progress display shows it.
JobView = dict[str, Any]

#: OpenAI's limits per batch: requests, and input file bytes (200 MB, with a margin).
MAX_REQUESTS = 50_000
MAX_BYTES = 190_000_000
#: How often the queue looks whether every answer in progress waits (seconds), and how many
#: looks in a row it must find them so before it sends (the answers' sibling calls join).
LOOK_S = 0.01
CALM_LOOKS = 3

_ANSWER: contextvars.ContextVar[str] = contextvars.ContextVar("batched_answer")


@dataclass(frozen=True)
class BatchMode:
    """How a run's calls go out in batches (``batch=`` of :func:`judge.judge_file`).

    ``api``: through the provider's batch API (files and batches endpoints, at its batch
    price); ``file``: written to this JSONL file in OpenAI's batch input format (``vllm
    run-batch -i``), and read back from ``output`` (``vllm run-batch -o``) when given. Either
    stops the run where the batch is not answered yet (``wait_s`` seconds for the API; the
    file at once), and running the same again picks up. ``resend_online``: a request that
    failed in the batch, or whose output does not parse, is made online instead of becoming a
    ``judge_error`` (online, an output that does not parse is asked again)."""

    api: bool = False
    file: Path | None = None
    output: Path | None = None
    resend_online: bool = False
    #: seconds between two looks at a batch in progress
    poll_s: float = 30.0
    #: stop (resumable) when batches are still running after this many seconds; None: wait
    wait_s: float | None = None
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES
    #: ``progress(jobs)`` with each batch job's state, on every change
    progress: Callable[[list[JobView]], None] | None = field(default=None, compare=False)

    def refusal(self, model: str, executor: str = "local") -> str | None:
        """Why this mode cannot run (a usage error, with the fix), None when it can."""
        from judge.models.providers import provider_for

        if self.output is not None and self.file is None:
            return "--batch-output reads the results of --batch-file's requests: give both"
        if self.api == (self.file is not None):
            return "give either --batch-api or --batch-file, not both" if self.api else \
                "batch mode needs --batch-api or --batch-file"
        if provider_for(model) is not None:
            return (f"the model {model!r} runs in this process: there is no batch to send; "
                    "run without --batch-api / --batch-file, or pin a hosted or served model")
        if executor != "local":
            return "batch mode works with the local executor only (no --executor ray)"
        if self.poll_s <= 0 or self.max_requests < 1 or self.max_bytes < 1:
            return "batch poll interval and limits must be positive"
        return None


@dataclass
class Pending:
    """A call waiting in the queue: its request body, how to store its outcome, who waits."""

    call_id: str
    body: dict[str, Any]
    prompt: RenderedPrompt
    completion: int
    settle: Callable[[Outcome], Any]
    future: asyncio.Future[Any]
    reservation: Reservation | None = None


class Transport(Protocol):
    async def run(self, queue: BatchQueue, pending: list[Pending]) -> None:
        """Send ``pending`` and resolve each (:meth:`BatchQueue.ingest`), or raise
        :class:`RunStopped` (the queue stops what is left)."""


class BatchQueue:
    """The calls of a run in batch mode (the client's :class:`~judge.models.batched.Deferral`).
    ``phase`` counts the batches sent (1: the splits, 2: the verifications, ...)."""

    def __init__(self, mode: BatchMode, client: ModelClient, transport: Transport) -> None:
        self.mode, self.client, self.transport = mode, client, transport
        self.pending: dict[str, Pending] = {}
        self.waiting: Counter[str] = Counter()  # answer id -> its calls in the queue
        self.active = 0  # answers being judged
        self.phase = 0
        self.stopped: str | None = None

    # -- the client's side ------------------------------------------------------------------

    async def send(self, call_id: str, body: dict[str, Any], prompt: RenderedPrompt,
                   completion: int, settle: Callable[[Outcome], Any]) -> Any:
        if self.stopped:
            raise RunStopped(self.stopped)
        held = self.pending.get(call_id)
        if held is None:
            held = Pending(call_id, body, prompt, completion, settle,
                           asyncio.get_running_loop().create_future())
            self.pending[call_id] = held
        else:
            self.client.stats.merged += 1
        answer = _ANSWER.get("")
        self.waiting[answer] += 1
        try:
            return await asyncio.shield(held.future)
        finally:
            self.waiting[answer] -= 1

    # -- the runner's side ------------------------------------------------------------------

    @contextlib.contextmanager
    def judging(self, answer_id: str) -> Iterator[None]:
        """An answer in progress (its calls are counted as its own)."""
        token = _ANSWER.set(answer_id)
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1
            _ANSWER.reset(token)

    def ready(self) -> bool:
        """Calls wait, and every answer in progress waits for one of them."""
        busy = sum(1 for answer, n in self.waiting.items() if n > 0 and answer)
        return bool(self.pending) and busy >= self.active

    async def alongside(self, work: Awaitable[Any]) -> None:
        """Run ``work`` (the run's answers) and send the queue's batches as it fills."""
        task = asyncio.ensure_future(work)
        calm = 0
        try:
            while not task.done():
                await asyncio.wait([task], timeout=LOOK_S)
                calm = calm + 1 if self.ready() else 0
                if calm >= CALM_LOOKS:
                    calm = 0
                    await self._send_batch()
        finally:
            if not task.done():
                self.stop("the batch run was interrupted; run the same command again to "
                          "pick up")
                await asyncio.gather(task, return_exceptions=True)
        task.result()

    async def _send_batch(self) -> None:
        self.phase += 1
        batch = [p for p in self.pending.values() if not p.future.done()]
        try:
            await self.transport.run(self, batch)
        except RunStopped as exc:
            self.stop(str(exc))
        except Exception as exc:  # fail closed: nothing is judged from a batch gone wrong
            self.stop(f"the batch could not be sent or read ({type(exc).__name__}: "
                      f"{str(exc)[:500]}); what finished is stored, run the same command "
                      "again to pick up")
        for call_id in [c for c, p in self.pending.items() if p.future.done()]:
            del self.pending[call_id]

    # -- what transports use ----------------------------------------------------------------

    def reserve(self, batch: list[Pending]) -> list[Pending]:
        """Reserve the budgets of each request before it is sent, in order; the requests
        that do not fit are not sent and stop the run (the budget's message)."""
        admitted: list[Pending] = []
        for pending in batch:
            try:
                pending.reservation = self.client.flow.budget.reserve(
                    prompt_estimate(pending.prompt), pending.completion, 0)
            except BudgetSpent as exc:
                self.client.flow.usage_error = isinstance(exc, BudgetTooSmall)
                self.stop(self.client.flow.budget.message() or str(exc))
                break
            admitted.append(pending)
        return admitted

    def ingest(self, batch: list[Pending], results: dict[str, Outcome],
               missing: str) -> None:
        """Store each request's outcome (``missing``: the error of a request without one),
        commit, then let the answers waiting for them go on."""
        settled: list[tuple[Pending, Any, BaseException | None]] = []
        for pending in batch:
            if pending.future.done():
                continue
            outcome = results.get(pending.call_id) or Outcome(error=missing)
            self._release(pending)
            if not outcome.ok and self.mode.resend_online:
                settled.append((pending, ONLINE, None))
                continue
            try:
                settled.append((pending, pending.settle(outcome), None))
            except CallFailed as exc:  # stored with its error; online re-asks it when asked
                settled.append((pending, ONLINE, None) if self.mode.resend_online
                               else (pending, None, exc))
            except RunStopped as exc:
                settled.append((pending, None, exc))
        flush = getattr(self.client.store, "flush", None)
        if flush is not None:
            flush()  # stored before anything is reported or marked read
        for pending, value, error in settled:
            if error is not None:
                pending.future.set_exception(error)
            else:
                pending.future.set_result(value)

    def stop(self, reason: str) -> None:
        """Every call still waiting (and every later one) raises :class:`RunStopped`."""
        self.stopped = self.stopped or reason
        self.client.flow.stop(reason)
        for pending in self.pending.values():
            if not pending.future.done():
                self._release(pending)
                pending.future.set_exception(RunStopped(self.stopped))
                pending.future.exception()  # retrieved: no "never retrieved" warning

    def _release(self, pending: Pending) -> None:
        if pending.reservation is not None:
            self.client.flow.budget.release(pending.reservation)
            pending.reservation = None

    def show(self, jobs: list[JobView]) -> None:
        if self.mode.progress is not None:
            self.mode.progress(jobs)

    def deadline(self, started: float) -> bool:
        return self.mode.wait_s is not None and time.monotonic() - started >= self.mode.wait_s


class DeferringExecutor:
    """The local executor in batch mode: every answer at once, each known to the queue."""

    def __init__(self, inner: Executor, queue: BatchQueue) -> None:
        self.inner, self.queue = inner, queue
        self.capacity = 1 << 30

    async def judge(self, record: AnswerRecord, run_id: str, buffer: WriteBuffer,
                    domain: str | None = None) -> JudgedAnswer:
        with self.queue.judging(record.answer_id):
            return await self.inner.judge(record, run_id, buffer, domain)

    def stats(self) -> Any:
        return self.inner.stats()

    def close(self) -> None:
        self.inner.close()


def batched(mode: BatchMode, client: ModelClient, store: Any, run_id: str) -> BatchQueue:
    """The queue of a run in batch mode, its transport chosen by ``mode``, attached to the
    client (its calls not stored go to the queue)."""
    transport: Transport
    if mode.api:
        from judge.runs.batch_jobs import ProviderBatches

        transport = ProviderBatches(store, run_id)
    else:
        from judge.runs.batch_files import BatchFiles

        transport = BatchFiles()
    queue = BatchQueue(mode, client, transport)
    client.deferred = queue
    return queue
