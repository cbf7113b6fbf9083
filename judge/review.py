"""Human review: blind labels with provenance, double review, adjudication, gold export.

A *subject* is what a person labels: a claim (its claim id), or a whole answer that the judge
refused to grade (``answer:<answer id>``). Reviews are append-only: revising a label adds a
row (``revision`` + 1, ``supersedes`` the previous id); an annotator's current label is their
latest row. When two different annotators disagree, an adjudication decides; it names the
reviews it decided between, which stay as they were.

Only ``human:<id>`` annotators can write here, and only their labels are ever exported as
gold: a label written by a model can never become gold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from judge.records import content_hash
from judge.selfgrade import normalize_model
from judge.store import Store, now
from judge.verdicts import LABELS, Label, Subtype

#: The guideline version recorded with a review when none is configured.
DEFAULT_GUIDELINE_VERSION = "guideline-v1"

#: Subtypes a person may give a non-supported claim: the design's hallucination subtypes,
#: ``partial_support`` (part of the claim is in the source), and for claims that are not
#: checkable facts ``opinion`` / ``not_a_claim``.
REVIEW_SUBTYPES: tuple[str, ...] = (
    Subtype.UNSUPPORTED_ADDITION.value,
    Subtype.MISATTRIBUTION.value,
    Subtype.NUMERIC_OR_VERSION_ERROR.value,
    Subtype.SELF_CONTRADICTION.value,
    Subtype.OVERGENERALIZATION.value,
    Subtype.DROPPED_CONDITION.value,
    "partial_support",
    Subtype.OPINION.value,
    "not_a_claim",
)

HUMAN_PREFIX = "human:"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MAX_NOTE_CHARS = 5000
MAX_REASON_CHARS = 5000
MAX_TIME_SPENT_MS = 24 * 3600 * 1000

#: Item states, in the order a queue works through them.
STATES = ("pending", "needs_second_review", "needs_adjudication", "done", "adjudicated")


class ReviewError(ValueError):
    """A review, adjudication or export request that cannot be honoured; the message says why."""


# -- identities -----------------------------------------------------------------------------------


def human_annotator(name: str, store: Store | None = None) -> str:
    """``alice`` or ``human:alice`` -> ``human:alice``. Anything that is not a plain person id
    is refused: other prefixes (``model:``, ``judge:``), and, given a store, names of the
    judge models and answer generators seen in it."""
    raw = (name or "").strip()
    if ":" in raw:
        prefix, _, rest = raw.partition(":")
        if prefix != "human":
            raise ReviewError(
                f"annotator {raw!r} is not a person: only 'human:<id>' annotators may label "
                "(labels written by a model never become gold)"
            )
        raw = rest
    if not _NAME.fullmatch(raw):
        raise ReviewError(
            f"annotator id {raw!r} is not valid: use 1-64 letters, digits, '.', '_', '@', '-'"
        )
    if store is not None and normalize_model(raw) in _model_names(store):
        raise ReviewError(
            f"annotator id {raw!r} names a model seen in this store; reviews must be a person's"
        )
    return HUMAN_PREFIX + raw


def _model_names(store: Store) -> set[str]:
    names = {row["model"] for row in store.db.query("select model from judge_versions")}
    sql = "select distinct generator from answers where generator is not null"
    names |= {row["generator"] for row in store.db.query(sql)}
    return {normalize_model(n) for n in names if n}


def is_human(annotator: str | None) -> bool:
    return bool(annotator) and annotator.startswith(HUMAN_PREFIX) and bool(
        _NAME.fullmatch(annotator[len(HUMAN_PREFIX):])
    )


# -- validation -----------------------------------------------------------------------------------


def check_label(label: str | None, subtype: str | None) -> tuple[str, str | None]:
    """Validate a human label and subtype; returns them normalised (blank subtype -> None)."""
    label = (label or "").strip()
    subtype = (subtype or "").strip() or None
    if label not in LABELS:
        raise ReviewError(f"label {label!r} is not one of: {', '.join(LABELS)}")
    if label == Label.SUPPORTED:
        if subtype is not None:
            raise ReviewError(f"a supported claim takes no subtype (got {subtype!r})")
        return label, None
    if subtype is None:
        raise ReviewError(
            f"a subtype is required when the label is {label}: one of {', '.join(REVIEW_SUBTYPES)}"
        )
    if subtype not in REVIEW_SUBTYPES:
        raise ReviewError(f"subtype {subtype!r} is not one of: {', '.join(REVIEW_SUBTYPES)}")
    return label, subtype


def _text(value: str | None, limit: int, what: str) -> str | None:
    value = (value or "").strip() or None
    if value is not None and len(value) > limit:
        raise ReviewError(f"{what} is {len(value)} characters; the limit is {limit}")
    return value


@contextmanager
def write_transaction(store: Store) -> Iterator[None]:
    """``BEGIN IMMEDIATE``: take the write lock up front (waiting up to the busy timeout),
    so a read-then-write never fails on a lock upgrade while a batch is writing."""
    conn = store.db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.rollback()
        raise
    else:
        conn.commit()


# -- subjects -------------------------------------------------------------------------------------


def answer_subject(answer_id: str) -> str:
    return f"answer:{answer_id}"


@dataclass(frozen=True)
class Subject:
    subject: str
    claim_id: str | None
    answer_id: str


def resolve_subject(store: Store, subject: str) -> Subject:
    """A claim id or ``answer:<id>`` that exists in the store."""
    if subject.startswith("answer:"):
        answer_id = subject.removeprefix("answer:")
        if store.answer(answer_id) is None:
            raise ReviewError(f"no answer {answer_id!r} in the store")
        return Subject(subject, None, answer_id)
    row = next(store.db.query("select answer_id from claims where id = ?", [subject]), None)
    if row is None:
        raise ReviewError(f"no claim {subject!r} in the store")
    return Subject(subject, subject, row["answer_id"])


# -- reviews --------------------------------------------------------------------------------------


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    if "review_ids" in row and isinstance(row["review_ids"], str):
        row["review_ids"] = json.loads(row["review_ids"])
    return row


def review_history(store: Store, subject: str) -> list[dict[str, Any]]:
    """Every review row of a subject, oldest first (revisions included)."""
    return list(
        store.db.query(
            "select * from reviews where subject = ? order by created_at, annotator, revision",
            [subject],
        )
    )


def current_reviews(store: Store, subjects: Iterable[str] | None = None) -> dict[str, list[dict]]:
    """Subject -> each annotator's latest review, in order of first review."""
    sql = "select * from reviews"
    params: list[Any] = []
    wanted = None if subjects is None else list(subjects)
    if wanted is not None and len(wanted) <= 500:
        sql += f" where subject in ({','.join('?' * len(wanted))})"
        params = wanted
    sql += " order by subject, revision"
    first_seen: dict[tuple[str, str], str] = {}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    keep = None if wanted is None else set(wanted)
    for row in store.db.query(sql, params):
        if keep is not None and row["subject"] not in keep:
            continue
        key = (row["subject"], row["annotator"])
        first_seen.setdefault(key, row["created_at"])
        latest[key] = row
    out: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(latest, key=lambda k: (k[0], first_seen[k], k[1])):
        out.setdefault(key[0], []).append(latest[key])
    return out


def current_adjudications(
    store: Store, subjects: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Subject -> its latest adjudication."""
    keep = None if subjects is None else set(subjects)
    out: dict[str, dict[str, Any]] = {}
    for row in store.db.query("select * from adjudications order by subject, revision"):
        if keep is None or row["subject"] in keep:
            out[row["subject"]] = _decode(row)
    return out


def disagree(reviews: list[dict[str, Any]]) -> bool:
    """Two annotators disagree when their labels, or their subtypes, differ."""
    return len({(r["label"], r["subtype"]) for r in reviews}) > 1


def subject_state(
    reviews: list[dict[str, Any]], adjudication: dict[str, Any] | None, required: int
) -> str:
    if adjudication is not None:
        return "adjudicated"
    if not reviews:
        return "pending"
    if len(reviews) >= 2 and disagree(reviews):
        return "needs_adjudication"
    if len(reviews) < required:
        return "needs_second_review"
    return "done"


@dataclass(frozen=True)
class ReviewInput:
    """A validated review, ready to append."""

    subject: Subject
    annotator: str
    label: str
    subtype: str | None
    note: str | None
    guideline_version: str
    time_spent_ms: int | None
    queue_id: str | None
    item_id: str | None
    origin: str


def validate_review(
    store: Store,
    subject: str,
    annotator: str,
    label: str,
    subtype: str | None = None,
    note: str | None = None,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    time_spent_ms: int | None = None,
    queue_id: str | None = None,
    item_id: str | None = None,
    origin: str = "cli",
) -> ReviewInput:
    annotator = human_annotator(annotator, store)
    label, subtype = check_label(label, subtype)
    note = _text(note, MAX_NOTE_CHARS, "note")
    guideline_version = _text(guideline_version, 200, "guideline version") or ""
    if not guideline_version:
        raise ReviewError("a guideline version is required")
    if time_spent_ms is not None and not 0 <= time_spent_ms <= MAX_TIME_SPENT_MS:
        raise ReviewError(f"time spent {time_spent_ms} ms is outside 0..{MAX_TIME_SPENT_MS}")
    prev = next(
        store.db.query(
            "select label, subtype from reviews where subject = ? and annotator = ? "
            "order by revision desc limit 1",
            [subject, annotator],
        ),
        None,
    )
    if prev and (prev["label"], prev["subtype"]) != (label, subtype) and not note:
        was = prev["label"] + (f" / {prev['subtype']}" if prev["subtype"] else "")
        raise ReviewError(
            f"{annotator} labelled this {was} before; a changed label keeps the original and "
            "needs the reason: write it in the note"
        )
    return ReviewInput(
        resolve_subject(store, subject), annotator, label, subtype, note, guideline_version,
        time_spent_ms, queue_id, item_id, origin,
    )


def append_reviews(store: Store, reviews: list[ReviewInput]) -> list[dict[str, Any]]:
    """Append validated reviews in one short transaction. A review of a subject the same
    annotator reviewed before is a revision (history kept); by another annotator it is an
    independent second review."""
    rows = []
    with write_transaction(store):
        for r in reviews:
            subject = r.subject.subject
            prev = next(
                store.db.query(
                    "select id, revision from reviews where subject = ? and annotator = ? "
                    "order by revision desc limit 1",
                    [subject, r.annotator],
                ),
                None,
            )
            revision = prev["revision"] + 1 if prev else 1
            stamp = now()
            row = {
                "id": "r-" + content_hash([subject, r.annotator, revision, stamp])[:16],
                "subject": subject, "claim_id": r.subject.claim_id,
                "answer_id": r.subject.answer_id, "queue_id": r.queue_id,
                "item_id": r.item_id, "annotator": r.annotator, "label": r.label,
                "subtype": r.subtype, "note": r.note, "guideline_version": r.guideline_version,
                "created_at": stamp, "time_spent_ms": r.time_spent_ms, "revision": revision,
                "supersedes": prev["id"] if prev else None, "origin": r.origin,
            }
            store.db["reviews"].insert(row)
            rows.append(row)
    return rows


def record_review(store: Store, subject: str, annotator: str, label: str,
                  **kwargs: Any) -> dict[str, Any]:
    """Validate and append one review (see :func:`validate_review` for the fields)."""
    return append_reviews(store, [validate_review(store, subject, annotator, label, **kwargs)])[0]


def adjudicate(
    store: Store,
    subject: str,
    adjudicator: str,
    label: str,
    subtype: str | None,
    reason: str,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    queue_id: str | None = None,
    allow_reviewer: bool = False,
) -> dict[str, Any]:
    """Decide a disagreement. Both original reviews stay; the decision names them and says why.
    Adjudicating again adds a revision of the decision."""
    adjudicator = human_annotator(adjudicator, store)
    label, subtype = check_label(label, subtype)
    reason = _text(reason, MAX_REASON_CHARS, "reason") or ""
    if not reason:
        raise ReviewError("an adjudication needs a reason")
    target = resolve_subject(store, subject)
    reviews = current_reviews(store, [subject]).get(subject, [])
    if len(reviews) < 2:
        raise ReviewError(
            f"{subject} has {len(reviews)} review(s); adjudication decides between two or more"
        )
    prior = current_adjudications(store, [subject]).get(subject)
    if prior is None and not disagree(reviews):
        raise ReviewError(f"the reviewers of {subject} agree; there is nothing to adjudicate")
    if not allow_reviewer and adjudicator in {r["annotator"] for r in reviews}:
        raise ReviewError(
            f"{adjudicator} reviewed {subject}; adjudication must come from someone else"
        )
    stamp = now()
    revision = prior["revision"] + 1 if prior else 1
    row = {
        "id": "adj-" + content_hash([subject, adjudicator, revision, stamp])[:16],
        "subject": subject, "claim_id": target.claim_id, "answer_id": target.answer_id,
        "queue_id": queue_id, "adjudicator": adjudicator, "label": label, "subtype": subtype,
        "reason": reason, "review_ids": json.dumps([r["id"] for r in reviews]),
        "guideline_version": guideline_version, "created_at": stamp, "revision": revision,
        "supersedes": prior["id"] if prior else None,
    }
    with write_transaction(store):
        store.db["adjudications"].insert(row)
    return _decode(dict(row))


# -- gold -----------------------------------------------------------------------------------------


@dataclass
class GoldSummary:
    exported: int = 0
    awaiting_second_review: int = 0
    awaiting_adjudication: int = 0
    not_human: int = 0
    notes: list[str] = field(default_factory=list)


def _gold_scope(store: Store, queue_id: str | None) -> list[dict[str, Any]]:
    """One queue item per reviewed subject: the item of the given queue, else of the latest
    queue that holds the subject (its stratum and weight belong to that queue's design)."""
    sql = (
        "select qi.*, q.created_at as queue_created from queue_items qi "
        "join queues q on q.id = qi.queue_id "
        "where qi.subject in (select subject from reviews)"
    )
    params: list[Any] = []
    if queue_id:
        sql += " and qi.queue_id = ?"
        params.append(queue_id)
    sql += " order by q.created_at, qi.position"
    latest: dict[str, dict[str, Any]] = {}
    for row in store.db.query(sql, params):
        latest[row["subject"]] = row
    return sorted(latest.values(), key=lambda r: (r["queue_created"], r["position"]))


def _sources(record: Any) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in record.sources]


def _citations(store: Store, claim_id: str, record: Any) -> list[dict[str, Any]]:
    """The claim's citations of sources that exist (a citation of a missing source cannot be
    kept in a gold item; the claim then cites nothing that exists)."""
    row = next(store.db.query("select citations from claims where id = ?", [claim_id]), None)
    known = {s.id for s in record.sources}
    cites = json.loads(row["citations"]) if row and row["citations"] else []
    return [c for c in cites if c.get("source") in known]


def _revision(store: Store, review: dict[str, Any]) -> dict[str, Any] | None:
    """The annotator's original label when their current one is a changed revision."""
    if review["revision"] <= 1:
        return None
    first = next(
        store.db.query(
            "select * from reviews where subject = ? and annotator = ? and revision = 1",
            [review["subject"], review["annotator"]],
        ),
        None,
    )
    if first is None or (first["label"], first["subtype"]) == (review["label"], review["subtype"]):
        return None
    return {
        "original_label": first["label"], "original_subtype": first["subtype"],
        "original_annotator": first["annotator"], "reason": review["note"] or "(no reason given)",
        "revised_by": review["annotator"], "revised_at": review["created_at"],
    }


def gold_lines(
    store: Store,
    queue_id: str | None = None,
    include_single_pending: bool = False,
    summary: GoldSummary | None = None,
) -> Iterator[dict[str, Any]]:
    """Gold items in the format of ``shared/gold/external`` (id, dataset, question, answer,
    sources, claim, label, subtype, original_label, annotator) plus guideline version,
    adjudication, the individual reviews, stratum and weight.

    A subject becomes gold when its reviewers agree (and the required second review is in),
    or when an adjudication decided it. Non-human labels are never exported."""
    summary = summary if summary is not None else GoldSummary()
    items = _gold_scope(store, queue_id)
    subjects = [i["subject"] for i in items]
    reviews = current_reviews(store, subjects)
    adjudications = current_adjudications(store, subjects)
    records: dict[str, Any] = {}
    for item in items:
        subject = item["subject"]
        humans = [r for r in reviews.get(subject, []) if is_human(r["annotator"])]
        summary.not_human += len(reviews.get(subject, [])) - len(humans)
        adjudication = adjudications.get(subject)
        if adjudication is not None and not is_human(adjudication["adjudicator"]):
            summary.not_human += 1
            adjudication = None
        if not humans:
            continue
        state = subject_state(humans, adjudication, item["reviews_required"])
        if state == "needs_adjudication":
            summary.awaiting_adjudication += 1
            continue
        if state == "needs_second_review" and not include_single_pending:
            summary.awaiting_second_review += 1
            continue
        if adjudication is not None:
            label, subtype = adjudication["label"], adjudication["subtype"]
            annotator, guideline = adjudication["adjudicator"], adjudication["guideline_version"]
        else:
            label, subtype = humans[0]["label"], humans[0]["subtype"]
            annotator, guideline = humans[0]["annotator"], humans[0]["guideline_version"]
        answer_id = item["answer_id"]
        if answer_id not in records:
            records[answer_id] = store.answer_record(answer_id)
        record = records[answer_id]
        if item["kind"] == "answer":
            claim_text = record.answer if record else None
            citations = None
        else:
            row = next(store.db.query("select text from claims where id = ?", [subject]), None)
            claim_text = row["text"] if row else None
            citations = _citations(store, subject, record) if record else []
        summary.exported += 1
        yield {
            "id": subject,
            "dataset": f"review:{item['queue_id']}",
            "question": record.question if record else None,
            "answer": record.answer if record else None,
            "sources": _sources(record) if record else [],
            "claim": claim_text,
            "citations": citations,
            "label": label,
            "subtype": subtype,
            "original_label": None,
            "annotator": annotator,
            "guideline_version": guideline,
            "review_status": state,
            "revision": None if adjudication is not None else _revision(store, humans[0]),
            "adjudication": None if adjudication is None else {
                "id": adjudication["id"], "adjudicator": adjudication["adjudicator"],
                "reason": adjudication["reason"], "decided_at": adjudication["created_at"],
                "original_labels": [
                    {"annotator": r["annotator"], "label": r["label"], "subtype": r["subtype"],
                     "review_id": r["id"]}
                    for r in humans if r["id"] in set(adjudication["review_ids"])
                ],
            },
            "reviews": [
                {"review_id": r["id"], "annotator": r["annotator"], "label": r["label"],
                 "subtype": r["subtype"], "note": r["note"], "revision": r["revision"],
                 "guideline_version": r["guideline_version"], "created_at": r["created_at"]}
                for r in humans
            ],
            "claim_id": item["claim_id"],
            "answer_id": answer_id,
            "queue_id": item["queue_id"],
            "stratum": item["stratum"],
            "stratum_size": item["stratum_size"],
            "sample_size": item["sample_size"],
            "weight": item["weight"],
        }

