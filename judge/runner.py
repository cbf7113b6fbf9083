"""Run a JSONL batch through the pipeline into the store: resumable and idempotent.

Each answer's claims and verdicts are written in one transaction when the answer is
done, and each model call as soon as it returns, so a run killed at any moment and
started again finishes without losing or duplicating a verdict, and re-running a
finished batch with the same judge version makes zero model calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.fingerprint import code_fingerprint
from judge.models.client import ModelClient
from judge.pipeline import AnswerResult, Pipeline
from judge.records import AcceptedLine, RejectedLine, read_records
from judge.store import Store

Progress = Callable[[str, int, int], None]  # (event, done, total)


@dataclass
class RunSummary:
    run_id: str
    judge_version: str
    resumed: bool = False
    answers: int = 0
    answers_judged_now: int = 0
    answers_from_store: int = 0
    #: the code that judges now (judge.fingerprint), and how many answers taken from the
    #: store were judged by other (or unrecorded) code: their verdicts may be stale
    code: str = ""
    answers_from_other_code: int = 0
    claims: int = 0
    labels: Counter[str] = field(default_factory=Counter)
    subtypes: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    judge_errors: int = 0
    refused_answers: list[dict[str, str]] = field(default_factory=list)
    rejected_lines: list[dict[str, Any]] = field(default_factory=list)
    model_calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    wall_seconds: float = 0.0
    model_mismatch: list[str] = field(default_factory=list)

    def stale_warning(self, db: Path | str) -> str | None:
        """What to say when answers from the store were judged by other code."""
        if not self.answers_from_other_code:
            return None
        return (
            f"{self.answers_from_other_code} answer(s) taken from the store were judged by "
            f"other code than this ({self.code}), so their verdicts may be stale; "
            f"`judge replay --db {db} --run {self.run_id}` shows what this code would change "
            "(no model call), and records the answers it reproduces so this warning stops"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge_version": self.judge_version,
            "resumed": self.resumed,
            "answers": self.answers,
            "answers_judged_now": self.answers_judged_now,
            "answers_from_store": self.answers_from_store,
            "code": self.code,
            "answers_from_other_code": self.answers_from_other_code,
            "claims": self.claims,
            "labels": dict(sorted(self.labels.items())),
            "subtypes": dict(sorted(self.subtypes.items())),
            "flagged": self.flagged,
            "judge_errors": self.judge_errors,
            "refused_answers": self.refused_answers,
            "rejected_lines": self.rejected_lines,
            "model_calls": self.model_calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 6),
            "wall_seconds": round(self.wall_seconds, 2),
            "model_mismatch": self.model_mismatch,
        }


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_pipeline(config: JudgeConfig, store: Store | None, replay: bool = False) -> Pipeline:
    client = ModelClient(config, store, replay=replay)
    pipeline = Pipeline(config, client)
    if store is not None:
        store.ensure_judge_version(
            pipeline.judge_version, config.model, config.versioned_fields(), pipeline.templates
        )
    return pipeline


async def run_batch(
    input_path: Path,
    store: Store,
    config: JudgeConfig,
    progress: Progress | None = None,
    purpose: str = "run",
) -> RunSummary:
    started = time.perf_counter()
    pipeline = build_pipeline(config, store)
    run_id, resumed = store.start_run(
        pipeline.judge_version, str(input_path), file_sha256(input_path), purpose
    )
    summary = RunSummary(
        run_id=run_id, judge_version=pipeline.judge_version, resumed=resumed,
        code=code_fingerprint(),
    )
    todo: list[AcceptedLine] = []
    for item in read_records(input_path):
        if isinstance(item, RejectedLine):
            summary.rejected_lines.append(item.as_dict())
            store.add_rejected_line(run_id, item.line, item.error)
            continue
        conflict = store.answer_conflict(item.record)
        if conflict:
            summary.rejected_lines.append({"line": item.line, "error": conflict})
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
        progress("start", 0, total)
    done = 0
    semaphore = asyncio.Semaphore(config.concurrency)

    async def one(item: AcceptedLine) -> None:
        nonlocal done
        async with semaphore:
            result = await pipeline.judge(item.record, run_id)
        persist(store, run_id, item.line, pipeline.judge_version, result)
        done += 1
        if progress:
            progress("answer", done, total)

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


def persist(store: Store, run_id: str, line: int, judge_version: str, result: AnswerResult) -> None:
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
