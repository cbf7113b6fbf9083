"""The public Python API: judge answers, calibrate a judge against human gold, compare judge
versions. The CLI and the HTTP service are callers of these functions.

    import judge

    results = judge.judge_answers([{"answer": "...", "sources": [{"id": "S1", "text": "..."}]}])
    for answer in results:
        for verdict in answer.verdicts:
            print(verdict.claim, verdict.label, verdict.review_reasons)

Every function takes ``config`` (a path to a TOML file, a :class:`JudgeConfig`, or None: then
``$CLAIM_JUDGE_CONFIG``, else ``./judge.toml`` when present, else the default) and ``db`` (a
path to the SQLite store, an open :class:`~judge.store.Store`, or None: an in-memory store
that lives as long as the call). See ``docs/python-api.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Unpack

from pydantic import BaseModel, Field

from judge.config import JudgeConfig, load_config
from judge.errors import JudgeError
from judge.evaluation.calibrate import CalibrationOutcome
from judge.evaluation.calibrate import calibrate as calibrate_outcome
from judge.evaluation.drift import DriftResult, build_drift, missing_answers, version_config
from judge.evaluation.gold import GoldFile, load_gold
from judge.evaluation.matching import StoreIndex, gold_to_records
from judge.evaluation.reports import CalibrationResult, eval_cost
from judge.formats import DATASET_FORMATS, EXPORT_FORMATS, REVIEW_FORMATS
from judge.hashing import content_hash
from judge.models.client import RunStopped
from judge.records import AcceptedLine, AnswerRecord, RejectedLine, read_jsonl
from judge.records.jsonl import validate_record, without_duplicates
from judge.runs.admission import InputRefused, read_uncited_as_stored
from judge.runs.batch import BatchInput, Progress, run_batch
from judge.runs.loop import run_sync
from judge.runs.options import JudgeOptions, ResolvedOptions
from judge.runs.summary import RunSummary
from judge.split.uncited import read_uncited as _read
from judge.store import Store, opened
from judge.verdicts import AnswerStatus, Verdict

if TYPE_CHECKING:
    from judge.fitting.run import FitResult
    from judge.review.exchange import ImportResult

__all__ = [
    "AnswerResult", "CalibrationResult", "DriftResult", "JudgeResults", "RecordsError",
    "RunStopped", "calibrate", "drift", "eval_gold", "export", "fit", "import_reviews",
    "judge_answers", "judge_file", "load_config", "read_dataset",
]



class RecordProblem(BaseModel):
    """One bad input record: its position (0-based index in ``records``, or 1-based line of a
    file) and why it was rejected."""

    index: int
    reason: str


class RecordsError(JudgeError, ValueError):
    """Some input records are invalid; ``problems`` lists every one (nothing was judged)."""

    def __init__(self, problems: list[RecordProblem], what: str = "record") -> None:
        self.problems = problems
        shown = [f"{what} {p.index}: {p.reason}" for p in problems[:20]]
        more = [f"... and {len(problems) - 20} more"] if len(problems) > 20 else []
        super().__init__(
            f"{len(problems)} invalid {what}(s); nothing was judged "
            "(pass on_error='skip' to judge the rest):\n" + "\n".join(shown + more))


class AnswerResult(BaseModel):
    """One input answer: ``judged`` (with a verdict per claim), ``refused`` (the judge model
    would grade its own family's answer, or no generator is named under
    ``require_generator``), ``rejected`` (invalid input; ``error`` says why) or ``pending``
    (the run stopped before it: :class:`RunStopped`)."""

    answer_id: str | None
    status: Literal["judged", "refused", "rejected", "pending"]
    answer_status: AnswerStatus | None = None
    refused_reason: str | None = None
    error: str | None = None
    judge_version: str | None = None
    verdicts: list[Verdict] = Field(default_factory=list)

    @property
    def flagged(self) -> list[Verdict]:
        """The verdicts a person should look at."""
        return [v for v in self.verdicts if v.review]


class JudgeResults(list[AnswerResult]):
    """One :class:`AnswerResult` per input answer, in input order; ``summary`` tells what the
    run did (calls, tokens, labels, flags) and ``db`` where it is stored."""

    def __init__(self, results: Iterable[AnswerResult], summary: RunSummary,
                 db: Path | None) -> None:
        super().__init__(results)
        self.summary = summary
        self.db = db

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per claim (an answer without claims: one row with its
        status); needs the ``pandas`` extra (:mod:`judge.frames`)."""
        from judge.frames import to_pandas

        return to_pandas(self)


# -- config and store ---------------------------------------------------------------------------


def _config(config: str | Path | JudgeConfig | None, **overrides: Any) -> JudgeConfig:
    if isinstance(config, JudgeConfig):
        return config.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    return load_config(config, **overrides)


#: the ``db`` argument as a store (see :func:`judge.store.opened`)
_store = opened


# -- judging ------------------------------------------------------------------------------------


def judge_answers(
    records: Iterable[dict[str, Any] | AnswerRecord],
    *,
    config: str | Path | JudgeConfig | None = None,
    db: str | Path | Store | None = None,
    **options: Unpack[JudgeOptions],
) -> JudgeResults:
    """Judge answer records (dicts in the JSONL schema, or :class:`AnswerRecord` s);
    ``options``: :class:`JudgeOptions`.

    Returns one :class:`AnswerResult` per record, in input order. Invalid records (and
    answer ids already stored with different content) raise one :class:`RecordsError` listing
    every one of them, before anything is judged; with ``on_error="skip"`` they become
    ``rejected`` results and the rest is judged. Answers already judged by the same judge
    version in ``db`` are taken from it (zero model calls); an interrupted call resumes.
    ``progress(done, total)`` is called as answers finish.

    ``retry_errors`` judges again the stored answers whose verdicts include a
    ``judge_error`` (the calls behind them are made again; earlier calls and verdicts stay
    on record). ``max_calls`` / ``max_tokens`` / ``max_cost`` (USD) are budgets of this call:
    when one is spent, or the provider fails ``breaker_after`` calls in a row, the run stops
    cleanly and :class:`RunStopped` is raised, carrying ``summary`` and the ``results`` of
    what finished; calling again with the same input resumes.

    ``executor="ray"`` spreads the answers over ``workers`` Ray workers (default: one per CPU
    of the cluster; ``ray_address`` names a cluster, else a local one is started); this
    process alone writes ``db``, so results and resuming are the same as with ``"local"``."""
    return judge_as("run", records, config=config, db=db, **options)


def judge_file(
    path: str | Path | BinaryIO | bytes,
    *,
    config: str | Path | JudgeConfig | None = None,
    db: str | Path | Store | None = None,
    **options: Unpack[JudgeOptions],
) -> JudgeResults:
    """Judge a JSONL batch (a path, bytes, or a binary stream such as a pipe: read once).

    Like :func:`judge_answers` (the same :class:`JudgeOptions`), but a bad line is by
    default reported (in the results and in ``summary.rejected_lines``, with its line number
    and reason) and the rest is judged."""
    return judge_file_as("run", path, config=config, db=db, **options)


def judge_as(
    purpose: str,
    records: Iterable[dict[str, Any] | AnswerRecord],
    *,
    config: str | Path | JudgeConfig | None = None,
    db: str | Path | Store | None = None,
    **options: Unpack[JudgeOptions],
) -> JudgeResults:
    """:func:`judge_answers` with the run labelled ``purpose`` (the HTTP service's ``api``);
    not part of the public surface."""
    return _judge(_records_input(records), "record", config, db,
                  ResolvedOptions.of(options, "raise"), purpose, read_uncited=True)


def judge_file_as(
    purpose: str,
    path: str | Path | BinaryIO | bytes,
    *,
    config: str | Path | JudgeConfig | None = None,
    db: str | Path | Store | None = None,
    **options: Unpack[JudgeOptions],
) -> JudgeResults:
    """:func:`judge_file` with the run labelled ``purpose``; not part of the public surface."""
    batch = read_jsonl(path)
    name = str(path) if isinstance(path, str | Path) else "stream"
    return _judge(BatchInput(batch.items, name, batch.sha256), "line", config, db,
                  ResolvedOptions.of(options, "skip"), purpose, read_uncited=True)


def _records_input(
    records: Iterable[dict[str, Any] | AnswerRecord], domains: dict[str, str] | None = None
) -> BatchInput:
    """Validated records as a batch; ``domains`` (answer id -> domain) picks the decision
    rule of answers whose domain is known apart from the record (gold items' datasets)."""
    raw = list(records)
    items = list(without_duplicates(
        (validate_record(r, i) for i, r in enumerate(raw)), what="record"))
    return BatchInput(items, "records", content_hash([_identity(r) for r in raw]),
                      domains or {})


def _identity(record: Any) -> Any:
    if isinstance(record, AnswerRecord):
        return record.model_dump(mode="json", by_alias=True)
    return record if isinstance(record, dict) else repr(record)


def _judge(
    batch: BatchInput,
    what: str,
    config: str | Path | JudgeConfig | None,
    db: str | Path | Store | None,
    options: ResolvedOptions,
    purpose: str,
    read_uncited: bool = False,
) -> JudgeResults:
    """``read_uncited``: the batch is the user's input, whose answers that cite nothing are
    read under the config's ``uncited``; gold items and drift's answers are read as they are."""
    on_error, spread = options.on_error, options.spread
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    cfg = _config(config, concurrency=options.concurrency)
    offset = 1 if what == "record" else 0
    with _store(db) as store:
        if read_uncited:
            batch = read_uncited_as_stored(store, batch, lambda r: _read(r, cfg.uncited))
        if offset:  # stored line numbers are 1-based positions
            items: Sequence[AcceptedLine | RejectedLine] = [_shift(i) for i in batch.items]
            batch = BatchInput(items, batch.name, batch.sha256, batch.domains)
        try:
            summary = run_sync(run_batch(batch, store, cfg, progress=options.progress,
                                         purpose=purpose, limits=options.limits,
                                         retry_errors=options.retry_errors,
                                         executor=spread.executor,
                                         ray_address=spread.ray_address,
                                         workers=spread.workers, strict=on_error == "raise",
                                         in_batches=options.batch))
        except InputRefused as refused:  # invalid lines, ids stored with other content
            raise RecordsError(sorted((RecordProblem(index=line - offset, reason=why)
                                       for line, why in refused.problems),
                                      key=lambda p: p.index), what) from None
        results = JudgeResults(_results(store, summary, batch.items, what), summary,
                               store.path)
        if summary.stopped:
            raise RunStopped(f"run {summary.run_id} stopped: {summary.stopped}", summary,
                             results)
        return results


def _shift(item: AcceptedLine | RejectedLine) -> AcceptedLine | RejectedLine:
    if isinstance(item, AcceptedLine):
        return AcceptedLine(item.line + 1, item.record)
    return RejectedLine(item.line + 1, item.error)


def _results(
    store: Store, summary: RunSummary, items: Sequence[AcceptedLine | RejectedLine], what: str
) -> list[AnswerResult]:
    """Results in input order, read back from the store (one source of truth for answers
    judged now and answers taken from the store)."""
    offset = 1 if what == "record" else 0
    rejected = {r["line"]: r["error"] for r in store.rejected_lines(summary.run_id)}
    covered = {r["answer_id"]: r for r in store.run_answer_rows(summary.run_id)}
    out = []
    for item in items:
        if isinstance(item, RejectedLine) or item.line in rejected:
            error = item.error if isinstance(item, RejectedLine) else rejected[item.line]
            answer_id = item.record.answer_id if isinstance(item, AcceptedLine) else None
            out.append(AnswerResult(answer_id=answer_id, status="rejected",
                                    error=f"{what} {item.line - offset}: {error}"))
            continue
        answer_id = item.record.answer_id
        row = covered.get(answer_id)
        if row is None:  # not judged: the run stopped before it
            out.append(AnswerResult(answer_id=answer_id, status="pending",
                                    error="not judged yet: the run stopped before it"))
            continue
        out.append(AnswerResult(
            answer_id=answer_id, status=row["status"], answer_status=row["answer_status"],
            refused_reason=row["refused_reason"], judge_version=summary.judge_version,
            verdicts=store.verdicts(answer_id, summary.judge_version),
        ))
    return out


# -- evaluation ---------------------------------------------------------------------------------


def _gold(gold: str | Path | GoldFile) -> GoldFile:
    return gold if isinstance(gold, GoldFile) else load_gold(Path(gold))


def calibrate(
    gold: str | Path | GoldFile,
    *,
    db: str | Path | Store,
    judge_version: str | None = None,
) -> CalibrationResult:
    """Calibrate a judge version (default: the one version that judged the gold claims)
    against human gold: confusion matrix, the direction of error (lenient / strict rates) with
    intervals, the review queue's recall and load, the validity gate. Refuses gold labelled by
    a model and answers generated by the judge's own model family (no override)."""
    gold_file = _gold(gold)
    with _store(db) as store:
        outcome = calibrate_outcome(store, gold_file, judge_version)
        return CalibrationResult(outcome)


def eval_gold(
    gold: str | Path | GoldFile,
    *,
    config: str | Path | JudgeConfig | None = None,
    db: str | Path | Store | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Judge the claims of a gold file (as given claims with their sources; resumable, stored
    calls reused), then calibrate that judge version against the gold labels. An item no answer
    record accepts (a NUL the gold reader keeps) is skipped, said in ``rejected_lines``."""
    gold_file = _gold(gold)
    entries = gold_file.entries[:limit] if limit else gold_file.entries
    conv = gold_to_records(entries)
    if conv.problems:
        raise RecordsError([RecordProblem(index=0, reason=p) for p in conv.problems],
                           "gold item")
    with _store(db) as store:
        # each item's dataset picks its domain's rule, if the config has one
        batch = _records_input(conv.records, conv.domains)
        # the run is named for what it is (Datasette and `judge runs` show the name)
        batch = replace(batch, name=f"eval-gold {gold_file.path}")
        results = _judge(batch, "record", config, store,
                         ResolvedOptions("skip", concurrency, progress), "eval")
        summary = results.summary
        index = StoreIndex(store, [summary.judge_version])
        outcome: CalibrationOutcome = calibrate_outcome(
            store, gold_file, summary.judge_version, entries=entries, refs=conv.refs,
            index=index)
        extra = {"run": summary.as_dict(), "cost": eval_cost(store, outcome.rows),
                 "cpus": os.cpu_count(), "limit": limit}
        return CalibrationResult(outcome, extra=extra, summary=summary)


def drift(
    version_a: str,
    version_b: str,
    *,
    db: str | Path | Store,
    gold: str | Path | GoldFile | None = None,
    records: Iterable[dict[str, Any] | AnswerRecord] | str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> DriftResult:
    """Compare two judge versions (ids or unique prefixes) on the same claims: flip table,
    agreement and κ, McNemar / Stuart–Maxwell / Bowker, flipped claims with both rationales;
    with ``gold``, each version against the gold labels and flips toward / away from gold.

    ``records`` (answer records, or a JSONL path) and the gold claims are judged first by
    whichever version has not judged them yet (re-running a stored version's config), so the
    report covers them; ``progress(version, done, total)`` follows that judging."""
    from judge.evaluation import EvaluationError
    from judge.evaluation.calibrate import resolve_version

    gold_file = _gold(gold) if gold is not None else None
    with _store(db) as store:
        a, b = resolve_version(store, version_a), resolve_version(store, version_b)
        if a == b:
            raise EvaluationError("the two judge versions are the same")
        inputs: list[list[dict[str, Any] | AnswerRecord]] = []
        group_domains: list[dict[str, str]] = []
        answer_ids: set[str] | None = None
        if records is not None:
            if isinstance(records, str | Path):
                batch = read_jsonl(records)
                given: list[dict[str, Any] | AnswerRecord] = [
                    i.record for i in batch.items if isinstance(i, AcceptedLine)]
            else:
                given = list(records)
            inputs.append(given)
            group_domains.append({})
            answer_ids = {_answer_id(r) for r in given}
        refs = None
        if gold_file is not None:
            conv = gold_to_records(gold_file.entries)
            if conv.problems:
                raise RecordsError([RecordProblem(index=0, reason=p) for p in conv.problems],
                                   "gold item")
            refs = conv.refs
            inputs.append(list(conv.records))
            group_domains.append(conv.domains)
        for group, domains in zip(inputs, group_domains, strict=True):
            ids = [_answer_id(r) for r in group]
            for version in (a, b):
                todo = set(missing_answers(store, version, ids))
                if not todo:
                    continue
                cfg = version_config(store, version)
                pending = [r for r in group if _answer_id(r) in todo]
                step = ((lambda done, total, v=version: progress(v, done, total))
                        if progress else None)
                results = _judge(_records_input(pending, domains), "record", cfg, store,
                                 ResolvedOptions("skip", progress=step), "drift")
                if results.summary.judge_version != version:
                    raise EvaluationError(
                        f"re-running {version} produced version {results.summary.judge_version}")
        return build_drift(store, a, b, gold=gold_file, refs=refs, answer_ids=answer_ids)


def _answer_id(record: dict[str, Any] | AnswerRecord) -> str:
    if isinstance(record, AnswerRecord):
        return record.answer_id
    return AnswerRecord.model_validate(record).answer_id


# -- formats ------------------------------------------------------------------------------------

# What :func:`export` writes, :func:`read_dataset` and :func:`import_reviews` read: one list
# (judge.formats).


def read_dataset(path: str | Path, fmt: str) -> list[dict[str, Any]]:
    """A RAGAS evaluation dataset or DeepEval test cases (``fmt``: one of
    :data:`~judge.formats.DATASET_FORMATS`; JSONL, JSON or CSV) as answer records (dicts in
    the JSONL schema, ready for :func:`judge_answers`). Raises ``ValueError`` naming every
    bad row."""
    from judge.records.peers import read_peer_file

    return read_peer_file(path, fmt)


def import_reviews(
    path: str | Path,
    fmt: str,
    *,
    db: str | Path | Store,
    queue: str | None = None,
    guideline_version: str | None = None,
    dry_run: bool = False,
) -> ImportResult:
    """Label Studio or Argilla annotations (``fmt``: one of
    :data:`~judge.formats.REVIEW_FORMATS`) of an exported queue (:func:`export`) as reviews
    by their annotators (``human:<id>``; a model's label is refused). All or nothing: the
    result's ``errors`` list every problem and then nothing is stored."""
    from judge.review.annotation_tools import import_annotations
    from judge.review.reviews import DEFAULT_GUIDELINE_VERSION

    with _store(db) as store:
        return import_annotations(store, Path(path), fmt, queue,
                                  guideline_version or DEFAULT_GUIDELINE_VERSION, dry_run)


def export(
    output: str | Path | Any,
    fmt: str = "jsonl",
    *,
    db: str | Path | Store,
    run_id: str | None = None,
    queue: str | None = None,
    reveal: bool = False,
) -> None:
    """Write ``fmt`` (:data:`~judge.formats.EXPORT_FORMATS`) to ``output`` (a path, or a text
    stream for every format but ``parquet``). Verdicts and records cover ``run_id`` (default:
    the latest run); annotation-tool tasks cover ``queue`` (default: the latest), blind
    unless ``reveal``."""
    import json as _json

    from judge.outputs import check_output, write_text
    from judge.review.queue import QueueError

    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    with _store(db) as store:
        if isinstance(output, str | Path):
            check_output(output, db=store.path)
        if fmt == "datasette-metadata":
            from judge.store.metadata import datasette_metadata

            name = store.path.stem if store.path else "judge"
            chunks: Iterable[str] = [_json.dumps(datasette_metadata(name), indent=2) + "\n"]
        elif fmt in REVIEW_FORMATS:
            from judge.review.annotation_tools import tool_lines

            chunks = tool_lines(store, fmt, queue, reveal)
        else:
            run_id = run_id or store.latest_run_id()
            if run_id is None:
                raise QueueError(f"no runs in {store.path or 'the store'}")
            chunks = _run_chunks(store, fmt, run_id, output)
            if fmt == "parquet":
                list(chunks)
                return
        if isinstance(output, str | Path):
            write_text(output, chunks, db=store.path, newline="")
        else:
            output.writelines(chunks)


def _run_chunks(store: Store, fmt: str, run_id: str, output: Any) -> Iterator[str]:
    from judge.review.export import export_rows, to_csv, to_jsonl, write_parquet

    if fmt in DATASET_FORMATS:
        from judge.records.peers import peer_lines

        ids = [r["answer_id"] for r in store.run_answer_rows(run_id)]
        records = (store.answer_record(i) for i in ids)
        yield from peer_lines((r for r in records if r is not None), fmt)
        return
    rows = export_rows(store, run_id=run_id)
    if fmt == "parquet":
        if not isinstance(output, str | Path):
            raise ValueError("Parquet is written to a file: give an output path")
        from judge.outputs import atomic_path

        with atomic_path(output) as tmp:
            write_parquet(rows, tmp)
        return
    yield from (to_jsonl(rows) if fmt == "jsonl" else to_csv(rows))


# -- fitting ------------------------------------------------------------------------------------


def fit(
    gold: str | Path | GoldFile | None = None,
    *,
    db: str | Path | Store,
    output: str | Path | None = None,
    judge_version: str | None = None,
    domain: str | None = None,
    holdout: float = 0.3,
    seed: int = 0,
    queue_recall: float = 0.9,
    curve: bool = False,
    check_gold: str | Path | GoldFile | None = None,
    adopt: bool = False,
    shrink: Literal["current", "zero"] | None = None,
) -> FitResult:
    """Learn the ``scores`` strategy's decision rule from reviewed claims, with zero model
    calls: class-balanced logistic regression over the option log-probabilities and the
    program's features stored for ``judge_version`` (default: the one version that judged
    the gold claims), L2 by grouped cross-validation, the review threshold for
    ``queue_recall`` with 95% confidence. ``gold`` None: the reviews adjudicated in ``db``.

    ``domain``: fit the rule of that domain only (gold items whose answer carries that
    domain tag, else whose ``dataset`` it is); the config keeps every other rule. Part of
    the gold (``holdout``, by answer, seeded) or ``check_gold`` measures the candidate
    against the current version; the result says whether the adoption rule holds
    (``recommend_adopt``). ``output``: write the candidate config there; with ``adopt``,
    only when the rule holds. ``curve``: quality against the number of reviewed claims.
    ``shrink``: the penalty pulls the weights toward the rule that decides now (``current``,
    the default with ``domain``) or toward 0 (``zero``, the default without). Raises
    :class:`~judge.fitting.FitRefused` for gold labelled by a model, answers generated by the
    judge model's family, a version that is not ``scores``, too little gold. See
    ``docs/fit.md``."""
    from judge.fitting.items import gold_from_store
    from judge.fitting.run import fit_store, write_config

    if shrink not in (None, "current", "zero"):
        raise ValueError(f"shrink must be 'current' or 'zero', not {shrink!r}")

    with _store(db) as store:
        gold_file = _gold(gold) if gold is not None else gold_from_store(store)
        check = _gold(check_gold) if check_gold is not None else None
        result = fit_store(store, gold_file, judge_version=judge_version, domain=domain,
                           holdout=holdout, seed=seed, queue_recall=queue_recall, curve=curve,
                           check_gold=check, from_reviews=gold is None,
                           toward_current=None if shrink is None else shrink == "current")
        if output is not None and write_config(result, Path(output), adopt) \
                and result.point_gold is not None:
            from judge.evaluation.operating import set_points
            from judge.fitting.operating import point_targets

            rows = set_points(
                store, result.candidate_version, domain or "", result.point_gold.scores,
                result.point_gold.problems,
                {"file": f"judge fit: {result.gold.get('file')} (out of fold)",
                 "sha256": result.gold.get("sha256")},
                point_targets(queue_recall), created_by="judge fit",
                gold_source=f"judge fit of {result.gold.get('file')}, out of fold",
                spec=result.point_gold.spec)
            result.points_stored = [r["id"] for r in rows]
    return result
