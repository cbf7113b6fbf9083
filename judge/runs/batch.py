"""Run a batch of answer records through the pipeline into the store: resumable and idempotent.

Each answer's claims and verdicts are written in one transaction when the answer is done,
and each model call as soon as it returns, so a run killed at any moment and started again
finishes without losing or duplicating a verdict, and re-running a finished batch with the
same judge version makes zero model calls.

The input is a sequence of accepted and rejected lines (:mod:`judge.records.jsonl`), however
it was read: a JSONL file, an HTTP body, or records built in memory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from judge.config import JudgeConfig
from judge.fingerprint import code_fingerprint
from judge.models.client import ModelClient
from judge.pipeline import JudgedAnswer, Pipeline
from judge.records import AcceptedLine, AnswerRecord, RejectedLine
from judge.runs.summary import RunSummary
from judge.store import Store

#: (answers done, answers to judge now)
Progress = Callable[[int, int], None]


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


def build_pipeline(config: JudgeConfig, store: Store | None, replay: bool = False) -> Pipeline:
    client = ModelClient(config, store, replay=replay)
    pipeline = Pipeline(config, client)
    if store is not None:
        store.ensure_judge_version(
            pipeline.judge_version, config.model, config.versioned_fields(), pipeline.templates
        )
    return pipeline


async def run_batch(
    batch: BatchInput,
    store: Store,
    config: JudgeConfig,
    progress: Progress | None = None,
    purpose: str = "run",
) -> RunSummary:
    started = time.perf_counter()
    pipeline = build_pipeline(config, store)
    run_id, resumed = store.start_run(pipeline.judge_version, batch.name, batch.sha256, purpose)
    summary = RunSummary(
        run_id=run_id, judge_version=pipeline.judge_version, resumed=resumed,
        code=code_fingerprint(),
    )
    todo: list[AcceptedLine] = []
    for item in batch.items:
        if isinstance(item, RejectedLine):
            store.add_rejected_line(run_id, item.line, item.error)
            continue
        conflict = store.answer_conflict(item.record)
        if conflict:
            store.add_rejected_line(run_id, item.line, conflict)
            continue
        conflict = _rule_conflict(store, pipeline, item.record, batch.domain(item.record))
        if conflict:
            store.add_rejected_line(run_id, item.line, conflict)
            continue
        summary.answers += 1
        if store.answer_done(pipeline.judge_version, item.record.answer_id):
            known = store.link_answer(
                run_id, item.record.answer_id, item.line, pipeline.judge_version
            )
            summary.answers_from_store += 1
            summary.answers_from_other_code += int(summary.code not in known)
        else:
            todo.append(item)
    total = len(todo)
    if progress:
        progress(0, total)
    done = 0
    semaphore = asyncio.Semaphore(config.concurrency)

    async def one(item: AcceptedLine) -> None:
        nonlocal done
        async with semaphore:
            result = await pipeline.judge(item.record, run_id, batch.domain(item.record))
        persist(store, run_id, item.line, pipeline.judge_version, result)
        done += 1
        if progress:
            progress(done, total)

    await asyncio.gather(*(one(item) for item in todo))
    summary.answers_judged_now = total
    _tally(store, summary)
    stats = pipeline.client.stats
    summary.model_calls, summary.cached_calls, summary.failed_calls = (
        stats.made,
        stats.cached,
        stats.failed,
    )
    summary.prompt_tokens, summary.completion_tokens = stats.prompt_tokens, stats.completion_tokens
    summary.cost = stats.cost
    summary.model_mismatch = sorted(stats.model_mismatch)
    summary.wall_seconds = time.perf_counter() - started
    store.finish_run(run_id, summary.as_dict())
    return summary


def _rule_conflict(
    store: Store, pipeline: Pipeline, record: AnswerRecord, domain: str | None
) -> str | None:
    """An error message when this judge version already decided the answer with another
    rule than its domain now selects (its stored verdicts would be reused otherwise)."""
    if not pipeline.config.domain_rules:
        return None
    wanted = pipeline.rule_name(domain)
    stored = store.verdict_rules(pipeline.judge_version, record.answer_id) - {None}
    if stored and stored != {wanted}:
        return (
            f"answer {record.answer_id!r} was judged by {pipeline.judge_version} with rule "
            f"{', '.join(sorted(stored))}; its domain {domain!r} now selects rule {wanted!r}; "
            "give the answer a new id to judge it again"
        )
    return None


def persist(
    store: Store, run_id: str, line: int, judge_version: str, result: JudgedAnswer
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
    )


def _tally(store: Store, summary: RunSummary) -> None:
    """Count from the store, so a resumed run reports the whole run, not just its tail."""
    for row in store.verdict_rows(run_id=summary.run_id):
        summary.claims += 1
        summary.labels[row["label"]] += 1
        if row["subtype"]:
            summary.subtypes[row["subtype"]] += 1
        summary.flagged += int(row["review"])
        summary.judge_errors += int(row["label"] == "judge_error")
    for row in store.run_answer_rows(summary.run_id):
        if row["status"] == "refused":
            summary.refused_answers.append(
                {"answer_id": row["answer_id"], "reason": row["refused_reason"]}
            )
    summary.rejected_lines = store.rejected_lines(summary.run_id)
