"""Run a batch of answer records through the pipeline into the store: resumable and idempotent.

Each answer's claims and verdicts are written all or nothing, and model calls with them, in
batched transactions (:class:`judge.store.buffer.WriteBuffer`: every 32 answers or every
second, and at the end); an answer is reported done only once committed. So a run killed at
any moment and started again finishes without losing a reported answer or duplicating a
verdict, and re-running a finished batch with the same judge version makes zero model calls.
Answers are judged in this process or spread over Ray workers (:mod:`judge.runs.executors`);
the store is written here either way.

Every record stands alone: a failure while checking, judging or storing one record becomes
that record's rejection or a ``judge_error`` verdict, and the batch goes on. Whether a record
is judged, taken from the store, left to another run or rejected is decided in one place
(:mod:`judge.runs.admission`): a look at the whole input before the run, a claim with a lease
before each answer is judged, so concurrent runs on one store share the work, and an id stored
with different content is rejected whichever run comes first. An answer's result (its row,
claims, verdicts, the release of its lease) is written by one store call in one transaction.
When the model client stops the run (the circuit breaker, a budget), answers in flight finish
or are left for the resume, the run is recorded as ``stopped`` with what finished, and
:attr:`RunSummary.stopped` says why. Under a budget an answer starts only when its expected
cost fits (:mod:`judge.runs.budgets`), so the budget buys finished answers at any
concurrency. ``retry_errors`` judges again the answers whose stored
verdicts of the same judge version include a ``judge_error`` (the calls behind those errors
are made again; earlier calls and verdicts are kept as superseded).

The input is a sequence of accepted and rejected lines (:mod:`judge.records.jsonl`), however
it was read: a JSONL file, an HTTP body, or records built in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from judge.config import JudgeConfig
from judge.fingerprint import code_fingerprint
from judge.models.budget import ANSWER_SPEND, Limits
from judge.models.client import CallStore, ModelClient, RunStopped
from judge.models.prefix_files import record_in
from judge.models.preflight import ensure_loadable
from judge.pipeline import JudgedAnswer, Pipeline
from judge.records import AcceptedLine, AnswerRecord, RejectedLine
from judge.runs.admission import Gate, InputRefused, RuleOf
from judge.runs.budgets import AnswerBudget, Share, prior_of
from judge.runs.deferred import BatchMode, DeferringExecutor, batched
from judge.runs.executors import Executor, ExecutorName, LocalExecutor
from judge.runs.heap import run_heap
from judge.runs.summary import RunSummary
from judge.store import AnswerConflict, Store
from judge.store.buffer import WriteBuffer
from judge.store.leases import LEASE_SECONDS
from judge.store.prefix_states import PrefixStates
from judge.version import register

log = logging.getLogger(__name__)

#: (answers done, answers to judge now)
Progress = Callable[[int, int], None]
#: How often a run looks again at answers another run holds.
HELD_POLL_S = 0.5


@dataclass(frozen=True)
class BatchInput:
    """What a run judges and how it is named: resuming finds the unfinished run of the same
    input (by ``sha256``) and judge version."""

    items: Sequence[AcceptedLine | RejectedLine]
    name: str
    sha256: str
    #: answer id -> domain, for answers whose domain is known apart from the record (a gold
    #: item's ``dataset`` in ``judge eval-gold``: the converted record keeps its identity);
    #: otherwise the record's own ``domain`` picks the decision rule
    domains: Mapping[str, str] = field(default_factory=dict)

    def domain(self, record: AnswerRecord) -> str | None:
        return self.domains.get(record.answer_id, record.domain)


def build_pipeline(
    config: JudgeConfig, store: Store | None, replay: bool = False,
    limits: Limits | None = None, calls: CallStore | None = None,
) -> Pipeline:
    """``calls``: where the model client keeps its calls (default: the store itself). The
    embedded runtime records the instructions' states it saves in ``store``, and restores
    only those recorded there (judge.models.prefix_files)."""
    client = ModelClient(config, calls if calls is not None else store, replay=replay,
                         limits=limits)
    if store is not None and store.path is not None and not replay:
        record_in(PrefixStates(store.path))
    pipeline = Pipeline(config, client)
    if store is not None:
        register(store, config, pipeline.root)
    return pipeline


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


class _Run:
    """One invocation of a batch: the pipeline, its admissions, what is left and why it
    stopped."""

    def __init__(self, store: Store, pipeline: Pipeline, run_id: str, gate: Gate,
                 progress: Progress | None, runner: Executor, buffer: WriteBuffer,
                 domain_of: Callable[[AnswerRecord], str | None],
                 allowance: AnswerBudget | None = None) -> None:
        self.store, self.pipeline, self.run_id = store, pipeline, run_id
        self.runner, self.buffer, self.domain_of = runner, buffer, domain_of
        self.version = pipeline.judge_version
        self.gate, self.progress = gate, progress
        #: the answers' admission under the run's budgets (None: the run has none)
        self.allowance = allowance
        self.stopped: str | None = None
        self.held: list[AcceptedLine] = []
        self.done = self.total = self.judged_now = self.retried = 0
        #: answers taken from the store: (answer id, judged or reproduced by this code)
        self.from_store: list[tuple[str, bool]] = []

    def step(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)

    def reject(self, line: int, error: str) -> None:
        with contextlib.suppress(Exception):  # the store refuses: nothing more to record
            self.store.add_rejected_line(self.run_id, line, error)

    def stop(self, reason: str) -> None:
        self.stopped = self.stopped or reason
        if self.allowance is not None:
            self.allowance.halt()

    async def one(self, item: AcceptedLine, semaphore: asyncio.Semaphore) -> None:
        async with semaphore:
            if self.stopped:
                return
            share = None
            if self.allowance is not None:  # its expected cost must fit the budgets first
                share = await self.allowance.admit(item.record)
                if share is None:
                    self.stopped = self.stopped or BUDGET_REACHED
                    return
            finished = False
            try:
                finished = await self._claimed(item, share)
            finally:
                if self.allowance is not None and share is not None:
                    self.allowance.done(share, finished)

    async def _claimed(self, item: AcceptedLine, share: Share | None) -> bool:
        """Claim the answer and judge it unless it is done, held or rejected; whether it
        was judged now."""
        try:
            admission = self.gate.claim(item.record, self.run_id)
        except Exception as exc:
            self.reject(item.line, f"cannot claim the answer: {_why(exc)}")
            self.step()
            return False
        if admission.rejected:
            self.reject(item.line, admission.reason or admission.decision)
            self.step()
        elif admission.decision == "held":
            self.held.append(item)
        elif admission.decision == "done":
            self._link(item)
        else:
            return await self._judge(item, admission.redo, admission.refresh, share)
        return False

    async def _judge(self, item: AcceptedLine, redo: bool, refresh: frozenset[str],
                     share: Share | None = None) -> bool:
        record, pipeline = item.record, self.pipeline
        pipeline.client.refresh |= refresh  # a retry makes the calls behind its errors again
        result: JudgedAnswer | None = None
        spending = ANSWER_SPEND.set(share.spent if share is not None else None)
        try:
            result = await self.runner.judge(record, self.run_id, self.buffer,
                                             self.domain_of(record))
        except RunStopped as exc:
            self.stop(str(exc))
            self.gate.release(record.answer_id)
            return False
        except Exception as exc:  # fail closed: this answer is a judge_error, the batch goes on
            error = f"unexpected error while judging: {_why(exc)}"
        finally:
            ANSWER_SPEND.reset(spending)
        if result is None:
            try:
                result = pipeline.failed(record, error)
            except Exception as exc:
                self.reject(item.line, f"cannot judge the record: {_why(exc)}")
                self.gate.release(record.answer_id)
                self.step()
                return True
        done = result

        def write() -> None:
            self._persist(item, done, redo)

        self.judged_now += 1
        self.retried += int(redo)
        self.buffer.add_answer(write, self.step)  # reported once committed
        return True

    def _persist(self, item: AcceptedLine, result: JudgedAnswer, redo: bool) -> None:
        holder = self.gate.holder
        try:
            persist(self.store, self.run_id, item.line, self.version, result, redo=redo,
                    holder=holder)
            return
        except AnswerConflict as exc:
            self.reject(item.line, str(exc))
        except Exception as exc:
            try:  # what could not be stored becomes a judge_error, if that can be stored
                failed = self.pipeline.failed(item.record, f"cannot store the result: {_why(exc)}")
                persist(self.store, self.run_id, item.line, self.version, failed, redo=redo,
                        holder=holder)
                return
            except Exception as again:
                self.reject(item.line, f"cannot store the record: {_why(again)}")
        self.gate.release(item.record.answer_id)

    def _link(self, item: AcceptedLine, counted: bool = True) -> None:
        try:
            known = self.store.link_answer(self.run_id, item.record.answer_id, item.line,
                                           self.version)
            self.from_store.append((item.record.answer_id, code_fingerprint() in known))
        except Exception as exc:
            self.reject(item.line, f"cannot take the answer from the store: {_why(exc)}")
        if counted:
            self.step()

    async def heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.gate.lease_s / 3)
            with contextlib.suppress(Exception):  # a busy store: again at the next beat
                self.gate.renew()

    async def committer(self) -> None:
        """Commit finished answers on a timer, not only when the next one finishes."""
        while True:
            await asyncio.sleep(self.buffer.seconds / 2)
            try:
                self.buffer.flush_if_due()
            except Exception as exc:  # an answer that could not be written: the rest is in
                log.warning("committing finished answers: %s", _why(exc))


async def run_batch(
    batch: BatchInput,
    store: Store,
    config: JudgeConfig,
    progress: Progress | None = None,
    purpose: str = "run",
    limits: Limits | None = None,
    retry_errors: bool = False,
    lease_s: float = LEASE_SECONDS,
    executor: ExecutorName = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    strict: bool = False,
    in_batches: BatchMode | None = None,
) -> RunSummary:
    """``executor="ray"`` spreads the answers over ``workers`` Ray workers
    (:mod:`judge.runs.ray_executor`); the store is written here either way. ``strict``:
    raise :class:`~judge.runs.admission.InputRefused` before the run starts when a line is
    invalid or an answer id is stored with different content (else those lines are
    rejected and the rest is judged). ``in_batches``: the calls go out in batches
    (:mod:`judge.runs.deferred`); a mode that cannot run raises ``ValueError``."""
    budgets = limits is not None and limits != Limits()
    if executor != "local" and (retry_errors or budgets):
        raise ValueError("--retry-errors and budgets work with the local executor only")
    refusal = in_batches.refusal(config.model, executor) if in_batches is not None else None
    if refusal:
        raise ValueError(refusal)
    started = time.perf_counter()
    buffer = WriteBuffer(store)
    pipeline = build_pipeline(config, store, limits=limits, calls=buffer)
    gate = Gate(store, pipeline.judge_version, _rules(pipeline, batch), retry_errors, lease_s)
    screened = gate.screen(batch.items)
    if strict and screened.refused:
        raise InputRefused(screened.refused)
    if screened.todo and not pipeline.client.replay:  # a model that cannot load: nothing stored
        ensure_loadable(config, load_runtime=executor == "local")
    run_id, resumed = store.start_run(pipeline.judge_version, batch.name, batch.sha256, purpose)
    summary = RunSummary(
        run_id=run_id, judge_version=pipeline.judge_version, resumed=resumed,
        code=code_fingerprint(), uncited=config.uncited,
    )
    runner: Executor = LocalExecutor(pipeline, config)
    allowance = None
    if budgets:
        budget = pipeline.client.flow.budget
        allowance = AnswerBudget(budget, prior_of(pipeline, budget))
    run = _Run(store, pipeline, run_id, gate, progress, runner, buffer, batch.domain,
               allowance)
    for line, error in screened.rejected:
        run.reject(line, error)
    todo = screened.todo
    for item in (*screened.done, *todo):
        summary.answers += 1
        summary.missing_generator += int(item.record.generator is None)
    for item in screened.done:  # taken from the store at once; the rest is claimed when judged
        run._link(item, counted=False)
    run.total = len(todo)
    if progress:
        progress(0, run.total)
    if todo and executor != "local":
        run.runner = runner = _executor(executor, pipeline, config, store, ray_address, workers)
    queue = batched(in_batches, pipeline.client, store, run_id) if in_batches and todo \
        else None
    if queue is not None:  # every answer at once; their calls wait for the batches
        run.runner = runner = DeferringExecutor(runner, queue)
    semaphore = asyncio.Semaphore(runner.capacity)
    beat = asyncio.ensure_future(run.heartbeat())
    committer = asyncio.ensure_future(run.committer())
    try:
        with run_heap():  # no full collection of the modules' heap while calls wait
            work = asyncio.gather(*(run.one(item, semaphore) for item in todo))
            await (queue.alongside(work) if queue is not None else work)
            while run.held and not run.stopped:  # answers another live run is judging
                await asyncio.sleep(HELD_POLL_S)
                buffer.flush()  # what this run finished is visible to the others
                waiting, run.held = run.held, []
                await asyncio.gather(*(run.one(item, semaphore) for item in waiting))
    finally:
        beat.cancel()
        committer.cancel()
        runner.close()
        buffer.flush()
        gate.release()
    summary.answers_judged_now = run.judged_now
    summary.retried_answers = run.retried
    summary.answers_from_store = len(run.from_store)
    summary.answers_from_other_code = sum(1 for _, same in run.from_store if not same)
    _tally(store, summary)
    stats = runner.stats()
    summary.model_calls, summary.cached_calls, summary.failed_calls = (
        stats.made,
        stats.cached,
        stats.failed,
    )
    summary.attempts, summary.merged_calls = stats.attempts, stats.merged
    summary.prompt_tokens, summary.completion_tokens = stats.prompt_tokens, stats.completion_tokens
    summary.cost = stats.cost
    summary.cached_tokens = stats.cached_tokens or None
    summary.model_mismatch = sorted(stats.model_mismatch)
    summary.wall_seconds = time.perf_counter() - started
    summary.usage_error = bool(run.stopped) and pipeline.client.flow.usage_error
    summary.setup_exit = pipeline.client.flow.setup_exit if run.stopped else None
    if run.stopped:
        pending = [item.record for item in todo if not store.answer_done(
            pipeline.judge_version, item.record.answer_id)]
        summary.pending = len(pending)
        # a budget's message with the final numbers (calls in flight finished since it
        # stopped), the answers finished and about what the rest would need
        spent = allowance.message(pending, summary.answers) if allowance else None
        summary.stopped = spent or pipeline.client.stop_reason() or run.stopped
        if spent and allowance:
            summary.budget_to_finish = allowance.to_finish(pending)
    store.finish_run(run_id, summary.as_dict(), status="stopped" if run.stopped else "finished")
    return summary


#: Why a run stopped when the next answer's expected cost did not fit (the summary replaces it
#: with the budget's numbers, :meth:`judge.runs.budgets.AnswerBudget.message`).
BUDGET_REACHED = "budget reached"


def _executor(
    name: ExecutorName, pipeline: Pipeline, config: JudgeConfig, store: Store,
    ray_address: str | None, workers: int | None,
) -> Executor:
    if name == "local":
        return LocalExecutor(pipeline, config)
    if name == "ray":
        from judge.runs.ray_executor import RayExecutor

        return RayExecutor(config, pipeline.judge_version, store.path, ray_address, workers)
    raise ValueError(f"executor must be 'local' or 'ray', not {name!r}")


def _rules(pipeline: Pipeline, batch: BatchInput) -> RuleOf:
    """Record -> (the rule its domain selects, its domain); the rule only when the config has
    domain rules (an answer judged with another rule is then rejected, not reused)."""
    ruled = bool(pipeline.config.domain_rules)

    def rule_of(record: AnswerRecord) -> tuple[str | None, str | None]:
        domain = batch.domain(record)
        return (pipeline.rule_name(domain) if ruled else None), domain

    return rule_of


def persist(
    store: Store, run_id: str, line: int, judge_version: str, result: JudgedAnswer,
    redo: bool = False, holder: str | None = None,
) -> None:
    store.save_answer_result(
        run_id,
        line,
        result.record,
        judge_version,
        result.claims,
        result.verdicts,
        status=result.status,
        answer_status=result.answer_status,
        refused_reason=result.refused_reason,
        skipped=result.skipped,
        redo=redo,
        holder=holder,
    )


def _tally(store: Store, summary: RunSummary) -> None:
    """Count from the store, so a resumed run reports the whole run, not just its tail."""
    for row in store.verdict_rows(run_id=summary.run_id):
        summary.claims += 1
        summary.labels[row["label"]] += 1
        if row["subtype"]:
            summary.subtypes[row["subtype"]] += 1
        summary.flagged += int(row["review"])
        if row["review"]:
            summary.flag_reasons.update(set(row["review_reasons"]))
        summary.judge_errors += int(row["label"] == "judge_error")
    for row in store.run_answer_rows(summary.run_id):
        if row["status"] == "refused":
            summary.refused_answers.append(
                {"answer_id": row["answer_id"], "reason": row["refused_reason"]}
            )
    summary.rejected_lines = store.rejected_lines(summary.run_id)
