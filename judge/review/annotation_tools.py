"""The review queue out to Label Studio and Argilla, and their annotations back as reviews.

Out: one task (Label Studio) or record (Argilla) per queue item, blind like every other queue
export (:func:`judge.review.exchange.export_lines`, :mod:`judge.review.blind`): no judge
label, subtype or rationale, no reasons, stratum, weight or rank, in the queue's shuffled
export order. With ``reveal`` the judge's label is attached the way each tool shows a model's
opinion (a Label Studio *prediction*, an Argilla *suggestion*), never as an annotation, and
the reasons, stratum, weight and reading position come along as data / metadata.

In: each person's annotation becomes that person's review (``human:<id>``: the Label Studio
user's e-mail, else ``ls-<user id>``; the Argilla ``user_id``), validated like any review,
all or nothing. Only what a person submitted counts: Argilla responses whose ``status`` is
``submitted`` (draft and discarded ones are counted and left out; a response without a
status, as ``records.to_json`` writes them, is refused and counted, see
:data:`ARGILLA_STATUS_HELP`), Label Studio annotations that were not cancelled or skipped
(those, and drafts, are counted and left out). What a model wrote is refused: Label Studio
results whose ``origin`` is ``prediction`` (a model's label accepted unchanged), annotator
ids that name a model seen in the store; Argilla suggestions are never read. Reviews imported
this way become gold through ``judge gold export`` like any other.

The labelling set-up each tool needs is :data:`LABEL_STUDIO_CONFIG` and
:func:`argilla_settings` (documented in ``docs/review.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from judge.formats import REVIEW_FORMATS
from judge.labels import LABELS
from judge.review.exchange import ImportResult, export_lines
from judge.review.export import flat_text
from judge.review.queue import QueueError, get_queue, queue_items
from judge.review.reviews import (
    DEFAULT_GUIDELINE_VERSION,
    REVIEW_SUBTYPES,
    ReviewError,
    ReviewInput,
    append_reviews,
    current_reviews,
    human_annotator,
    validate_review,
)
from judge.store import Store

TOOLS = REVIEW_FORMATS
MAX_TOOL_FILE_BYTES = 256 * 1024 * 1024


def _choices(name: str, values: tuple[str, ...], required: bool) -> str:
    lines = [f'  <Choices name="{name}" toName="claim" choice="single" showInline="true"'
             + (' required="true"' if required else "") + ">"]
    lines += [f"    <Choice value={quoteattr(v)}/>" for v in values]
    return "\n".join([*lines, "  </Choices>"])


#: The Label Studio labelling configuration the exported tasks are made for.
LABEL_STUDIO_CONFIG = "\n".join([
    "<View>",
    '  <Header value="Claim"/>',
    '  <Text name="claim" value="$claim"/>',
    '  <Header value="Question"/>',
    '  <Text name="question" value="$question"/>',
    '  <Header value="Answer"/>',
    '  <Text name="answer" value="$answer"/>',
    '  <Header value="Cited"/>',
    '  <Text name="citations" value="$citations"/>',
    '  <Header value="Sources"/>',
    '  <Text name="sources" value="$sources"/>',
    _choices("label", LABELS, True),
    '  <Header value="Subtype (required unless supported)"/>',
    _choices("subtype", REVIEW_SUBTYPES, False),
    '  <TextArea name="note" toName="claim" placeholder="Note (why, when you change a label)"'
    ' maxSubmissions="1"/>',
    "</View>",
    "",
])


#: Argilla text fields that may be empty (an answer record without a question, a claim that
#: cites nothing): optional in :func:`argilla_settings`, and left out of a record when empty,
#: since Argilla refuses a record without a value for a required field.
ARGILLA_OPTIONAL_FIELDS = ("question", "citations")


#: Metadata of every task / record; :data:`REVEAL_METADATA` only with ``reveal``.
BLIND_METADATA = ("item_id", "queue_id", "claim_id", "answer_id")
REVEAL_METADATA = ("stratum", "weight", "priority", "reasons")


def _metadata(line: dict[str, Any], reveal: bool) -> dict[str, Any]:
    meta = {k: line[k] for k in BLIND_METADATA}
    if reveal:
        meta.update({k: line[k] for k in REVEAL_METADATA})
        meta["reasons"] = ", ".join(line["reasons"])
    return meta


def argilla_settings(reveal: bool = False) -> dict[str, Any]:
    """The fields and questions of the Argilla dataset the records are made for, as plain
    data (``rg.Settings(fields=[rg.TextField(name=...)...], questions=[rg.LabelQuestion(
    name="label", labels=...), ...])``). ``optional_fields`` are created with
    ``required=False``."""
    return {
        "fields": ["claim", "question", "answer", "citations", "sources"],
        "optional_fields": list(ARGILLA_OPTIONAL_FIELDS),
        "questions": {"label": {"type": "label_selection", "labels": list(LABELS),
                                "required": True},
                      "subtype": {"type": "label_selection", "labels": list(REVIEW_SUBTYPES),
                                  "required": False},
                      "note": {"type": "text", "required": False}},
        "metadata": list(BLIND_METADATA + (REVEAL_METADATA if reveal else ())),
    }


def _texts(line: dict[str, Any]) -> dict[str, str]:
    """The texts a person reads, flattened (no JSON)."""
    return {
        "claim": line["claim"] or "",
        "question": line["question"] or "",
        "answer": line["answer"] or "",
        "citations": str(flat_text(line["citations"]) or ""),
        "sources": "\n\n".join(str(flat_text(s)) for s in line["sources"]),
    }


def label_studio_tasks(store: Store, queue_id: str | None = None, reveal: bool = False,
                       status: str | None = None) -> Iterator[dict[str, Any]]:
    """Label Studio tasks (``[{"data": {...}}, ...]``, importable as a JSON file)."""
    for line in export_lines(store, queue_id, reveal=reveal, status=status):
        task: dict[str, Any] = {"data": {**_texts(line), **_metadata(line, reveal)}}
        if reveal and line.get("judge_label"):
            result = [{"from_name": "label", "to_name": "claim", "type": "choices",
                       "value": {"choices": [line["judge_label"]]}}]
            if line.get("judge_subtype") in REVIEW_SUBTYPES:
                result.append({"from_name": "subtype", "to_name": "claim", "type": "choices",
                               "value": {"choices": [line["judge_subtype"]]}})
            task["predictions"] = [{"model_version": line["judge_version"], "result": result}]
        yield task


def argilla_records(store: Store, queue_id: str | None = None, reveal: bool = False,
                    status: str | None = None) -> Iterator[dict[str, Any]]:
    """Argilla records in the form ``dataset.records.to_json`` writes and
    ``rg.Dataset.records.log`` / ``Record.from_dict`` read."""
    for line in export_lines(store, queue_id, reveal=reveal, status=status):
        fields = {k: v for k, v in _texts(line).items()
                  if v or k not in ARGILLA_OPTIONAL_FIELDS}
        record: dict[str, Any] = {
            "id": line["item_id"],
            "fields": fields,
            "metadata": _metadata(line, reveal),
            "suggestions": {}, "responses": {}, "vectors": {},
        }
        if reveal and line.get("judge_label"):  # as the Label Studio prediction: both
            record["suggestions"]["label"] = {"value": line["judge_label"], "score": None,
                                              "agent": line["judge_version"]}
            if line.get("judge_subtype") in REVIEW_SUBTYPES:
                record["suggestions"]["subtype"] = {
                    "value": line["judge_subtype"], "score": None, "agent": line["judge_version"]}
        yield record


# -- import ---------------------------------------------------------------------------------------


@dataclass
class Annotation:
    """One person's answer to one item, as read from a tool's export."""

    where: str
    item_id: str | None
    claim_id: str | None
    annotator: str
    label: str | None
    subtype: str | None
    note: str | None
    time_spent_ms: int | None = None
    from_model: str | None = None  # why this is a model's label, not a person's
    #: why this is not a submitted label (a status: draft, discarded, cancelled, skipped) or
    #: MISSING_STATUS; such annotations are counted, never imported
    not_submitted: str | None = None


MISSING_STATUS = "missing status"
#: How to export Argilla responses with their status (``records.to_json`` leaves it out).
ARGILLA_STATUS_HELP = (
    "Argilla's records.to_json() leaves out each response's status, so a draft or discarded "
    "label cannot be told from a submitted one; export the records with the status of every "
    "response, e.g. for record in dataset.records(with_responses=True): write record.to_dict() "
    "with responses[question] = [{value, user_id, status}] taken from record.responses "
    "(docs/review.md shows the script)"
)


def _load(path: Path) -> Any:
    if path.stat().st_size > MAX_TOOL_FILE_BYTES:
        raise QueueError(f"{path} is larger than {MAX_TOOL_FILE_BYTES} bytes")
    text = path.read_text(encoding="utf-8-sig")
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # JSON lines
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise QueueError(f"{path} is neither JSON nor JSON lines: {exc.msg}") from exc


def _first(values: Any) -> str | None:
    if isinstance(values, list):
        values = values[0] if values else None
    return values if isinstance(values, str) and values.strip() else None


def _ls_user(completed_by: Any) -> str:
    if isinstance(completed_by, dict):
        for key in ("email", "username"):
            if completed_by.get(key):
                return str(completed_by[key])
        completed_by = completed_by.get("id")
    return f"ls-{completed_by}"


def label_studio_annotations(data: Any) -> Iterator[Annotation]:
    """Annotations of a Label Studio JSON export (tasks with ``annotations``)."""
    if not isinstance(data, list):
        raise QueueError("a Label Studio export is a JSON array of tasks")
    for t, task in enumerate(data, start=1):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise QueueError(f"task {t}: not a Label Studio task (no 'data' object)")
        item_id, claim_id = task["data"].get("item_id"), task["data"].get("claim_id")
        for d, _draft in enumerate(task.get("drafts") or [], start=1):
            yield Annotation(where=f"task {t} ({item_id}) draft {d}", item_id=item_id,
                             claim_id=claim_id, annotator="", label=None, subtype=None,
                             note=None, not_submitted="draft")
        for a, ann in enumerate(task.get("annotations") or [], start=1):
            if not isinstance(ann, dict):
                raise QueueError(f"task {t} annotation {a}: not an object")
            if ann.get("was_cancelled") or ann.get("was_skipped") or ann.get("skipped"):
                yield Annotation(where=f"task {t} ({item_id}) annotation {a}", item_id=item_id,
                                 claim_id=claim_id, annotator=_ls_user(ann.get("completed_by")),
                                 label=None, subtype=None, note=None,
                                 not_submitted="cancelled or skipped")
                continue
            values: dict[str, Any] = {}
            origins: set[str] = set()
            for result in ann.get("result") or []:
                value = result.get("value") or {}
                name = result.get("from_name")
                values[name] = _first(value.get("choices")) if "choices" in value else \
                    _first(value.get("text"))
                origins.add(str(result.get("origin") or "manual"))
            lead = ann.get("lead_time")
            yield Annotation(
                where=f"task {t} ({item_id}) annotation {a}", item_id=item_id,
                claim_id=claim_id, annotator=_ls_user(ann.get("completed_by")),
                label=values.get("label"), subtype=values.get("subtype"),
                note=values.get("note"),
                time_spent_ms=int(lead * 1000) if isinstance(lead, int | float) else None,
                from_model="its result was a model's prediction accepted unchanged (origin "
                           "'prediction')" if "prediction" in origins else None,
            )


def _status(answer: dict[str, Any]) -> str | None:
    """A response's status (``ResponseStatus.submitted`` read as ``submitted``)."""
    status = answer.get("status")
    if status is None or not str(status).strip():
        return None
    return str(status).strip().rpartition(".")[2].lower()


def argilla_annotations(data: Any) -> Iterator[Annotation]:
    """Responses of Argilla records (``to_dict`` form, with each response's ``status``); only
    submitted responses count; draft and discarded ones, and responses without a status, are
    yielded as not submitted (counted, never imported); suggestions are never read."""
    if not isinstance(data, list):
        raise QueueError("an Argilla export is a JSON array of records")
    for r, record in enumerate(data, start=1):
        if not isinstance(record, dict) or not isinstance(record.get("responses"), dict):
            raise QueueError(f"record {r}: not an Argilla record (no 'responses' object)")
        meta = record.get("metadata") or {}
        item_id = meta.get("item_id") or record.get("id")
        by_user: dict[str, dict[str, Any]] = {}
        statuses: dict[str, set[str]] = {}
        for question, answers in record["responses"].items():
            for answer in answers or []:
                if not isinstance(answer, dict):
                    raise QueueError(f"record {r}: a response to {question!r} is not an object")
                user = str(answer.get("user_id") or "")
                by_user.setdefault(user, {})[question] = answer.get("value")
                statuses.setdefault(user, set()).add(_status(answer) or MISSING_STATUS)
        for user, values in by_user.items():
            status = statuses[user]
            # a user's response is one unit in Argilla: submitted only when every answer says so
            skip = None if status == {"submitted"} else (
                MISSING_STATUS if MISSING_STATUS in status
                else sorted(status - {"submitted"})[0])
            yield Annotation(
                where=f"record {r} ({item_id}) user {user}", item_id=item_id,
                claim_id=meta.get("claim_id"), annotator=user,
                label=_first(values.get("label")), subtype=_first(values.get("subtype")),
                note=_first(values.get("note")), not_submitted=skip,
            )


def import_annotations(
    store: Store,
    path: Path,
    tool: str,
    queue_id: str | None = None,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    dry_run: bool = False,
) -> ImportResult:
    """Store a tool's annotations as reviews of the queue's items: every annotation is
    validated first and nothing is stored unless all are valid. Annotations identical to the
    annotator's current review are left alone, so importing the same file twice adds
    nothing."""
    if tool not in TOOLS:
        raise QueueError(f"tool must be one of {', '.join(TOOLS)}, not {tool!r}")
    queue = get_queue(store, queue_id)
    items = queue_items(store, queue["id"])
    by_item = {i["id"]: i for i in items}
    by_claim = {i["claim_id"]: i for i in items if i["claim_id"]}
    reader = label_studio_annotations if tool == "label-studio" else argilla_annotations
    result = ImportResult()
    todo: list[ReviewInput] = []
    seen: dict[tuple[str, str], str] = {}
    annotations = list(reader(_load(path)))
    current = current_reviews(store, [i["subject"] for i in items])
    aliases = store.reviewer_alias_map()
    for ann in annotations:
        if ann.not_submitted == MISSING_STATUS:
            result.missing_status += 1
            continue
        if ann.not_submitted is not None:
            result.not_submitted[ann.not_submitted] = (
                result.not_submitted.get(ann.not_submitted, 0) + 1)
            continue
        if ann.label is None:
            result.blank += 1
            continue
        item = by_item.get(ann.item_id or "") or by_claim.get(ann.claim_id or "")
        try:
            if ann.from_model:
                raise ReviewError(f"refused: {ann.from_model}; only a person's label counts")
            if item is None:
                raise ReviewError(f"item {ann.item_id!r} is not in queue {queue['id']}")
            annotator = human_annotator(ann.annotator, store)
            who = aliases.get(annotator, annotator)  # one person under several ids
            key = (item["subject"], who)
            if key in seen:
                raise ReviewError(f"{annotator} ({who}) already labelled this item "
                                  f"({seen[key]})")
            seen[key] = ann.where
            mine = [r for r in current.get(item["subject"], []) if r["annotator"] == who]
            if mine and (mine[-1]["label"], mine[-1]["subtype"], mine[-1]["note"]) == (
                ann.label, ann.subtype or None, ann.note
            ):
                result.unchanged += 1
                continue
            todo.append(validate_review(
                store, item["subject"], annotator, ann.label, ann.subtype, ann.note,
                guideline_version=guideline_version, time_spent_ms=ann.time_spent_ms,
                queue_id=queue["id"], item_id=item["id"], origin=tool,
            ))
        except ReviewError as exc:
            result.errors.append(f"{ann.where}: {exc}")
    if result.missing_status:
        result.warnings.append(
            f"refused {result.missing_status} response(s) without a status: only submitted "
            f"responses become reviews. {ARGILLA_STATUS_HELP}")
    if result.not_submitted:
        result.warnings.append("left out what was not submitted: " + ", ".join(
            f"{n} {why}" for why, n in sorted(result.not_submitted.items())))
    if not result.errors and not dry_run:
        result.imported = len(append_reviews(store, todo))
    elif dry_run and not result.errors:
        result.imported = len(todo)
    return result


def tool_lines(store: Store, tool: str, queue_id: str | None = None, reveal: bool = False,
               status: str | None = None) -> Iterator[str]:
    """The export file of ``tool`` (a JSON array), streamed."""
    if tool not in TOOLS:
        raise QueueError(f"tool must be one of {', '.join(TOOLS)}, not {tool!r}")
    rows = (label_studio_tasks if tool == "label-studio" else argilla_records)(
        store, queue_id, reveal, status)
    yield "["
    for i, row in enumerate(rows):
        yield ("\n" if i == 0 else ",\n") + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"
