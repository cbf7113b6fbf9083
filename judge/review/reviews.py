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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.errors import JudgeError
from judge.hashing import content_hash
from judge.labels import LABELS, Label, Subtype
from judge.models.identity import normalize_model

if TYPE_CHECKING:  # the store (sqlite-utils) is imported by what uses it: the CLI starts fast
    from judge.store import Store

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


class ReviewError(JudgeError, ValueError):
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
    return {normalize_model(n) for n in store.model_names()}


def is_human(annotator: str | None) -> bool:
    return annotator is not None and annotator.startswith(HUMAN_PREFIX) and bool(
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
    row = store.claim_row(subject)
    if row is None:
        raise ReviewError(f"no claim {subject!r} in the store")
    return Subject(subject, subject, row["answer_id"])


# -- reviews --------------------------------------------------------------------------------------


def review_history(store: Store, subject: str) -> list[dict[str, Any]]:
    """Every review row of a subject, oldest first (revisions included)."""
    return store.review_rows(subject)


def current_reviews(
    store: Store, subjects: Iterable[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Subject -> each person's latest review, in order of first review. A person is an
    annotator id with its aliases (:mod:`judge.review.aliases`): each row's ``annotator`` is
    the person, ``annotator_id`` the id the review was given under."""
    aliases = store.reviewer_alias_map()
    first_seen: dict[tuple[str, str], str] = {}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    rows = sorted(store.reviews_in_order(subjects), key=lambda r: (r["created_at"], r["revision"]))
    for row in rows:
        who = aliases.get(row["annotator"], row["annotator"])
        row = {**row, "annotator_id": row["annotator"], "annotator": who}
        key = (row["subject"], who)
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
    for row in store.adjudication_rows():
        if keep is None or row["subject"] in keep:
            out[row["subject"]] = row
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
    prev = store.latest_review(subject, annotator)
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
    from judge.store.base import now

    rows = []
    with store.transaction():
        for r in reviews:
            subject = r.subject.subject
            prev = store.latest_review(subject, r.annotator)
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
            store.insert_review(row)
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
    aliases = store.reviewer_alias_map()
    if not allow_reviewer and aliases.get(adjudicator, adjudicator) in {
            r["annotator"] for r in reviews}:
        raise ReviewError(
            f"{adjudicator} reviewed {subject}; adjudication must come from someone else"
        )
    from judge.store.base import now

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
    store.insert_adjudication(row)
    return {**row, "review_ids": [r["id"] for r in reviews]}
