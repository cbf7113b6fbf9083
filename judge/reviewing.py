"""The review loop in the public API: build a review queue over judged runs, record people's
reviews, adjudicate disagreements, export what people agreed on as gold.

    summary = judge.build_queue(db="judge.db")                       # the latest run
    judge.record_review("c-…", "supported", annotator="alice", db="judge.db")
    judge.adjudicate("c-…", "contradicted", adjudicator="carol", reason="…", db="judge.db")
    judge.export_gold("gold.jsonl", db="judge.db")

Thin wrappers over :mod:`judge.review` (the CLI and the HTTP service call the same functions):
the ``db`` argument as everywhere else, keyword arguments with their defaults, and the errors
(:class:`~judge.review.queue.QueueError`, :class:`~judge.review.reviews.ReviewError`) under
:class:`judge.JudgeError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from judge.review.gold_export import GoldSummary, gold_lines
from judge.review.queue import QueueOptions, QueueSummary
from judge.review.queue import build_queue as _build_queue
from judge.review.reviews import DEFAULT_GUIDELINE_VERSION
from judge.review.reviews import adjudicate as _adjudicate
from judge.review.reviews import record_review as _record_review
from judge.store import Store, opened

__all__ = ["GoldSummary", "QueueOptions", "QueueSummary", "adjudicate", "build_queue",
           "export_gold", "record_review"]


def build_queue(
    run_ids: Sequence[str] | None = None,
    *,
    db: str | Path | Store,
    options: QueueOptions | None = None,
    created_by: str | None = None,
) -> QueueSummary:
    """Build and store a review queue over ``run_ids`` (default: the latest run): every
    flagged claim, and a seeded random sample of each stratum the judge passed
    (``options``: :class:`QueueOptions`, sample rate, minimum sample, seed, double-review
    fraction, priority and reading order). Returns the queue's id, strata with their sizes
    and weights, and categories."""
    with opened(db) as store:
        return _build_queue(store, list(run_ids) if run_ids else None, options, created_by)


def record_review(
    subject: str,
    label: str,
    *,
    db: str | Path | Store,
    annotator: str,
    subtype: str | None = None,
    note: str | None = None,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    time_spent_ms: int | None = None,
    queue_id: str | None = None,
    item_id: str | None = None,
) -> dict[str, Any]:
    """Record a person's review of ``subject`` (a claim id, or ``answer:<id>``): the label
    (and subtype) they gave, by ``annotator`` (``human:<id>``, or a bare id; a model's name
    is refused). A changed label of the same annotator is a revision and needs the reason in
    ``note``; the original is kept. Returns the stored review."""
    with opened(db) as store:
        return _record_review(store, subject, annotator, label, subtype=subtype, note=note,
                              guideline_version=guideline_version,
                              time_spent_ms=time_spent_ms, queue_id=queue_id, item_id=item_id,
                              origin="python")


def adjudicate(
    subject: str,
    label: str,
    *,
    db: str | Path | Store,
    adjudicator: str,
    reason: str,
    subtype: str | None = None,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    queue_id: str | None = None,
) -> dict[str, Any]:
    """Decide a disagreement between two or more reviews of ``subject``: both reviews stay,
    the decision names them and says why (``reason``). The adjudicator must not be one of
    the reviewers. Returns the stored adjudication."""
    with opened(db) as store:
        return _adjudicate(store, subject, adjudicator, label, subtype, reason,
                           guideline_version=guideline_version, queue_id=queue_id)


def export_gold(
    output: str | Path | IO[str] | None = None,
    *,
    db: str | Path | Store,
    queue: str | None = None,
    include_single_pending: bool = False,
) -> GoldSummary:
    """Write what people agreed on (or an adjudication decided) as gold items, one JSON
    object a line in the format of the gold files (``gold/README.md``), to ``output`` (a
    path or a text stream; None: nothing is written, the summary still counts). Only human
    labels are exported. ``queue``: the items of that queue (default: every reviewed
    subject); ``include_single_pending``: a subject still waiting for its second review
    counts with its one review. Returns how many were exported and why others were held
    back."""
    summary = GoldSummary()
    with opened(db) as store:
        lines = (json.dumps(line, ensure_ascii=False) + "\n"
                 for line in gold_lines(store, queue, include_single_pending, summary))
        if output is None:
            for _ in lines:
                pass
        elif isinstance(output, str | Path):
            Path(output).parent.mkdir(parents=True, exist_ok=True)
            with open(output, "w", encoding="utf-8") as fh:
                fh.writelines(lines)
        else:
            output.writelines(lines)
    return summary
