"""Reviewed claims as gold, in the format of the external gold sets: a subject becomes gold
when its reviewers agree (and the required second review is in), or when an adjudication
decided it. Non-human labels are never exported."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from judge.review.reviews import current_adjudications, current_reviews, is_human, subject_state
from judge.store import Store

# -- gold -----------------------------------------------------------------------------------------


@dataclass
class GoldSummary:
    exported: int = 0
    awaiting_second_review: int = 0
    awaiting_adjudication: int = 0
    not_human: int = 0
    #: reviewed subjects that no review queue holds: held back, since an item's stratum and
    #: weight come from its queue (build a queue over their run, then export again)
    outside_queues: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def held_back(self) -> str:
        """What was held back and why, in one line (the CLI prints it)."""
        parts = [f"{self.awaiting_adjudication} awaiting adjudication",
                 f"{self.awaiting_second_review} awaiting a second review"]
        if self.outside_queues:
            shown = ", ".join(self.outside_queues[:5]) + (
                ", ..." if len(self.outside_queues) > 5 else "")
            parts.append(f"{len(self.outside_queues)} reviewed outside every review queue "
                         f"({shown}): build a queue that holds them (`judge queue build "
                         "--run RUN_ID`), then export again")
        if self.not_human:
            parts.append(f"refused {self.not_human} non-human label(s)")
        return f"{self.exported} gold item(s); held back: " + "; ".join(parts)


def _gold_scope(store: Store, queue_id: str | None) -> list[dict[str, Any]]:
    """One queue item per reviewed subject: the item of the given queue, else of the latest
    queue that holds the subject (its stratum and weight belong to that queue's design)."""
    latest: dict[str, dict[str, Any]] = {}
    for row in store.reviewed_queue_items(queue_id):
        latest[row["subject"]] = row
    return sorted(latest.values(), key=lambda r: (r["queue_created"], r["position"]))


def _sources(record: Any) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in record.sources]


def _citations(store: Store, claim_id: str, record: Any) -> list[dict[str, Any]]:
    """The claim's citations of sources that exist (a citation of a missing source cannot be
    kept in a gold item; the claim then cites nothing that exists)."""
    row = store.claim_row(claim_id)
    known = {s.id for s in record.sources}
    cites = row["citations"] if row else []
    return [c for c in cites if c.get("source") in known]


def _revision(store: Store, review: dict[str, Any]) -> dict[str, Any] | None:
    """The annotator's original label when their current one is a changed revision."""
    if review["revision"] <= 1:
        return None
    first = store.first_review(review["subject"], review.get("annotator_id", review["annotator"]))
    if first is None or (first["label"], first["subtype"]) == (review["label"], review["subtype"]):
        return None
    return {
        "original_label": first["label"], "original_subtype": first["subtype"],
        "original_annotator": review["annotator"], "reason": review["note"] or "(no reason given)",
        "revised_by": review["annotator"], "revised_at": review["created_at"],
    }


def gold_lines(
    store: Store,
    queue_id: str | None = None,
    include_single_pending: bool = False,
    summary: GoldSummary | None = None,
) -> Iterator[dict[str, Any]]:
    """Gold items in the format of the gold files (``gold/README.md``: id, dataset, question,
    answer, sources, claim, label, subtype, original_label, annotator) plus guideline version,
    adjudication, the individual reviews, stratum and weight.

    A subject becomes gold when its reviewers agree (and the required second review is in),
    or when an adjudication decided it. Non-human labels are never exported."""
    summary = summary if summary is not None else GoldSummary()
    if queue_id is None:
        summary.outside_queues = store.reviewed_outside_queues()
    items = _gold_scope(store, queue_id)
    subjects = [i["subject"] for i in items]
    reviews = current_reviews(store, subjects)  # one per person (aliases resolved)
    adjudications = current_adjudications(store, subjects)
    aliases = store.reviewer_alias_map()
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
            annotator, guideline = (aliases.get(adjudication["adjudicator"],
                                                adjudication["adjudicator"]),
                                    adjudication["guideline_version"])
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
            row = store.claim_row(subject)
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
                "id": adjudication["id"], "adjudicator": annotator,
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

