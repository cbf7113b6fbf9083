"""Queue export (JSONL / CSV, for teams that label in other tools) and label import.

Export lines are blind by default (:mod:`judge.review.blind`): no judge label, subtype or
rationale, no reasons, stratum, weight or reading position, in the queue's shuffled export
order. ``reveal=True`` adds all of it, in reading order (for adjudication). Import reads
``label`` / ``subtype`` / ``note`` back from such a file, validates every line first (errors
carry line numbers) and stores nothing unless every line is valid.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.records.strictjson import loads
from judge.review.blind import visible_items
from judge.review.export import csv_lines
from judge.review.queue import QueueError, get_queue, item_verdict, queue_items
from judge.review.reviews import (
    DEFAULT_GUIDELINE_VERSION,
    STATES,
    ReviewError,
    append_reviews,
    check_label,
    current_reviews,
    human_annotator,
    validate_review,
)
from judge.store import Store

#: The fields of a blind export line.
EXPORT_FIELDS = (
    "item_id", "queue_id", "claim_id", "answer_id", "kind", "claim", "question", "answer",
    "citations", "sources", "reviews_required", "state",
)
#: The fields ``--reveal`` adds: the judge's opinion and the queue's design.
REVEAL_FIELDS = ("reasons", "priority", "stratum", "stratum_size", "sample_size", "weight",
                 "judge_label", "judge_subtype", "judge_rationale", "judge_version", "category")
#: Columns a labelled file gives back.
LABEL_FIELDS = ("label", "subtype", "note")
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def export_queue(store: Store, queue_id: str | None = None) -> dict[str, Any]:
    """The queue to export: ``queue_id``, else the latest, unless a later run that it does not
    cover was judged since (its claims would silently be missing from the export): then a
    :class:`QueueError` naming the queue and the run, and both ways on."""
    queue = get_queue(store, queue_id)
    if queue_id is not None:
        return queue
    runs = queue["run_ids"] or []
    covered = set(json.loads(runs) if isinstance(runs, str) else runs)
    newer = [r["id"] for r in store.runs() if r["purpose"] == "run"
             and r["started_at"] > queue["created_at"] and r["id"] not in covered]
    if newer:
        raise QueueError(
            f"the latest review queue {queue['id']} was built before run {newer[-1]}, whose "
            "claims it does not hold: build a queue over the new run first "
            "(judge.build_queue() in Python, `judge queue build` in a shell), or name the "
            f"queue to export it as it is (queue={queue['id']!r}, --queue {queue['id']})")
    return queue


def export_lines(
    store: Store, queue_id: str | None = None, reveal: bool = False, status: str | None = None
) -> Iterator[dict[str, Any]]:
    if status is not None and status not in STATES:
        raise QueueError(f"status {status!r} is not one of: {', '.join(STATES)}")
    queue = export_queue(store, queue_id)
    records: dict[str, Any] = {}
    full = {i["id"]: i for i in queue_items(store, queue["id"])}
    for shown in visible_items(store, queue["id"], full.values(), reveal=reveal):
        if status is not None and shown["state"] != status:
            continue
        item = full[shown["id"]]
        answer_id = item["answer_id"]
        if answer_id not in records:
            records[answer_id] = store.answer_record(answer_id)
        record = records[answer_id]
        verdict = item_verdict(store, item)
        claim = store.claim_row(item["claim_id"]) if item["claim_id"] else None
        line: dict[str, Any] = {
            "item_id": item["id"], "queue_id": item["queue_id"], "claim_id": item["claim_id"],
            "answer_id": answer_id, "kind": item["kind"],
            "claim": claim["text"] if claim else (record.answer if record else None),
            "question": record.question if record else None,
            "answer": record.answer if record else None,
            "citations": claim["citations"] if claim else [],
            "sources": [
                s.model_dump(mode="json", by_alias=True, exclude_none=True)
                for s in (record.sources if record else [])
            ],
            "reviews_required": item["reviews_required"], "state": item["state"],
        }
        if reveal:
            line.update({
                "reasons": item["reasons"], "priority": item["position"],
                "stratum": item["stratum"], "stratum_size": item["stratum_size"],
                "sample_size": item["sample_size"], "weight": item["weight"],
                "judge_label": verdict["label"] if verdict else None,
                "judge_subtype": verdict["subtype"] if verdict else None,
                "judge_rationale": verdict["rationale"] if verdict else None,
                "judge_version": item["judge_version"], "category": item["category"],
            })
        yield line


def queue_to_csv(lines: Iterable[dict[str, Any]], reveal: bool = False) -> Iterator[str]:
    """CSV with nested fields as JSON text and empty label/subtype/note columns to fill in."""
    return csv_lines(lines, EXPORT_FIELDS + (REVEAL_FIELDS if reveal else ()) + LABEL_FIELDS)


# -- import ---------------------------------------------------------------------------------------


@dataclass
class ImportResult:
    imported: int = 0
    unchanged: int = 0
    blank: int = 0
    errors: list[str] = field(default_factory=list)
    #: Annotations a person did not submit (Argilla draft / discarded responses, Label Studio
    #: cancelled or skipped annotations and drafts), by status: never imported.
    not_submitted: dict[str, int] = field(default_factory=dict)
    #: Responses whose status the file does not say (Argilla ``records.to_json``): refused.
    missing_status: int = 0
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"imported": self.imported, "unchanged": self.unchanged, "blank": self.blank,
                "errors": self.errors, "not_submitted": self.not_submitted,
                "missing_status": self.missing_status, "warnings": self.warnings}


@dataclass
class LabelLine:
    line: int
    item: dict[str, Any]
    label: str
    subtype: str | None
    note: str | None
    time_spent_ms: int | None


def _rows(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, parsed object or an error message)."""
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise QueueError(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
    if fmt == "auto":
        fmt = "csv" if path.suffix.lower() == ".csv" else "jsonl"
    if fmt not in ("jsonl", "csv"):
        raise QueueError("format must be jsonl, csv or auto")
    with open(path, encoding="utf-8-sig", newline="") as fh:
        if fmt == "csv":
            reader = csv.DictReader(fh)
            missing = [c for c in ("label",) if c not in (reader.fieldnames or [])]
            if missing or not ({"item_id", "claim_id"} & set(reader.fieldnames or [])):
                raise QueueError(
                    "the CSV header needs a 'label' column and an 'item_id' or 'claim_id' column"
                )
            start = reader.line_num + 1
            for row in reader:  # a row's number is the line it starts on (cells may hold \n)
                yield start, dict(row)
                start = reader.line_num + 1
            return
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = loads(raw)
            except (ValueError, RecursionError) as exc:  # JSONLimitError says which limit
                yield number, str(exc) or f"cannot read the line: {type(exc).__name__}"
                continue
            yield number, obj if isinstance(obj, dict) else "expected a JSON object"


def _parse_line(
    number: int, obj: dict[str, Any], by_item: dict[str, dict[str, Any]],
    by_claim: dict[str, dict[str, Any]],
    annotator: str,
) -> LabelLine | str | None:
    """A valid label line, an error message, or None for an unlabelled line."""
    def text(key: str) -> str | None:
        value = obj.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ReviewError(f"{key} must be text, got {type(value).__name__}")
        return value.strip() or None

    try:
        label = text("label")
        if not label:
            return None
        item_id, claim_id = text("item_id"), text("claim_id")
        if item_id:
            item = by_item.get(item_id)
            if item is None:
                return f"item_id {item_id!r} is not in this queue"
        elif claim_id:
            item = by_claim.get(claim_id)
            if item is None:
                return f"claim_id {claim_id!r} is not in this queue"
        else:
            return "needs an item_id or a claim_id"
        label, subtype = check_label(label, text("subtype"))
        line_annotator = text("annotator")
        if line_annotator and human_annotator(line_annotator) != annotator:
            return (
                f"annotator {line_annotator!r} differs from --annotator {annotator!r}; "
                "import one annotator's labels at a time"
            )
        spent = obj.get("time_spent_ms")
        if spent in (None, ""):
            spent = None
        else:
            try:
                spent = int(spent)
            except (TypeError, ValueError):
                return f"time_spent_ms {spent!r} is not a whole number"
        return LabelLine(number, item, label, subtype, text("note"), spent)
    except ReviewError as exc:
        return str(exc)


def import_labels(
    store: Store,
    path: Path,
    annotator: str,
    queue_id: str | None = None,
    fmt: str = "auto",
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    dry_run: bool = False,
) -> ImportResult:
    """Validate every line, then store each label as ``annotator``'s review (all or nothing).
    A label identical to the annotator's current one is left alone, so re-importing the same
    file adds nothing; a changed label is a revision."""
    annotator = human_annotator(annotator, store)
    queue = get_queue(store, queue_id)
    items = queue_items(store, queue["id"])
    by_item = {i["id"]: i for i in items}
    by_claim = {i["claim_id"]: i for i in items if i["claim_id"]}
    result = ImportResult()
    good: list[LabelLine] = []
    seen: dict[str, int] = {}
    for number, obj in _rows(path, fmt):
        parsed = obj if isinstance(obj, str) else _parse_line(
            number, obj, by_item, by_claim, annotator
        )
        if parsed is None:
            result.blank += 1
        elif isinstance(parsed, str):
            result.errors.append(f"line {number}: {parsed}")
        elif parsed.item["subject"] in seen:
            result.errors.append(
                f"line {number}: {parsed.item['subject']} was already labelled on line "
                f"{seen[parsed.item['subject']]}"
            )
        else:
            seen[parsed.item["subject"]] = number
            good.append(parsed)
    if result.errors or dry_run:
        return result
    current = current_reviews(store, [g.item["subject"] for g in good])
    todo = []
    for g in good:
        mine = [r for r in current.get(g.item["subject"], []) if r["annotator"] == annotator]
        if mine and (mine[-1]["label"], mine[-1]["subtype"], mine[-1]["note"]) == (
            g.label, g.subtype, g.note
        ):
            result.unchanged += 1
            continue
        try:
            todo.append(validate_review(
                store, g.item["subject"], annotator, g.label, g.subtype, g.note,
                guideline_version=guideline_version, time_spent_ms=g.time_spent_ms,
                queue_id=queue["id"], item_id=g.item["id"], origin="import",
            ))
        except ReviewError as exc:
            result.errors.append(f"line {g.line}: {exc}")
    if not result.errors:
        result.imported = len(append_reviews(store, todo))
    return result
