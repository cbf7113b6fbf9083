"""What a blind viewer sees of a review queue: the one rule behind every view of a queue (CLI
``queue list`` and ``queue export``, the Label Studio and Argilla tasks, the JSON API, the
review pages and the dashboard). Only ``--reveal`` / ``reveal_judge`` lifts it.

Blind, a viewer sees of an item only :data:`BLIND_FIELDS` (its id, queue, claim and answer,
the run, how many reviews it needs, its review state and who reviewed it) and a ``number``
in the viewer's own order. Nothing from which the judge's label, stratum or rank can be
inferred: no label, subtype, rationale or evidence, no reason (not even a check name or
``judge_flagged``: a sampled pass has none), no category, stratum, stratum size, sample
size, weight or reading position (:data:`JUDGE_FIELDS`), and no per-stratum count of a
queue (:func:`visible_queue`, :func:`visible_counts`).

The order carries nothing of the judge either: the items sorted by subject (a content
digest) and shuffled with a seed made of the queue's recorded blind seed (drawn when the
queue is built, kept in the store, so every order can be reproduced), the queue id and the
viewer: each person (aliases resolved, :mod:`judge.review.aliases`) gets their own order,
stable across reloads; exports share the queue's export order. Item ids are digests of the
subject (:func:`judge.review.queue.item_id`), so they do not tell the position either.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.store import Store

#: What a blind viewer sees of an item (besides its ``number``).
BLIND_FIELDS = ("id", "queue_id", "subject", "kind", "claim_id", "answer_id", "run_id",
                "reviews_required", "state", "reviewers")
#: What only a revealed view shows: the judge's reasons and the design of the queue.
JUDGE_FIELDS = ("position", "category", "reasons", "stratum", "stratum_size", "sample_size",
                "weight", "verdict_id", "judge_version", "inclusion_probability", "support")
#: What a blind viewer does not see of a queue (how many claims the judge passed or flagged).
JUDGE_QUEUE_FIELDS = ("strata",)
#: The viewer of exports (files that leave the project).
EXPORT_VIEWER = "export"


def order_seed(store: Store, queue_id: str, viewer: str | None) -> str:
    """The seed of ``viewer``'s blind order of a queue (``None``: the export order)."""
    return f"{store.queue_blind_seed(queue_id)}:{queue_id}:{viewer or EXPORT_VIEWER}"


def blind_order(items: Iterable[dict[str, Any]], seed: str) -> list[dict[str, Any]]:
    """``items`` in an order that depends on ``seed`` and their subjects only."""
    ordered = sorted(items, key=lambda i: str(i["subject"]))
    random.Random(seed).shuffle(ordered)
    return ordered


def visible_items(store: Store, queue_id: str, items: Iterable[dict[str, Any]], *,
                  reveal: bool, viewer: str | None = None) -> list[dict[str, Any]]:
    """A queue's items as ``viewer`` (a person, ``None`` for an export) may see them, in the
    order they may see them, each with its ``number`` (1 = first). Revealed: every field, in
    reading order, numbered by position. Blind: :data:`BLIND_FIELDS` only, in the viewer's
    shuffled order. Give every item of the queue (filter afterwards), so that an item keeps
    its number whatever the filter."""
    if reveal:
        return [{**item, "number": item["position"]}
                for item in sorted(items, key=lambda i: i["position"])]
    ordered = blind_order(items, order_seed(store, queue_id, viewer))
    return [{**{k: item[k] for k in BLIND_FIELDS if k in item}, "number": n}
            for n, item in enumerate(ordered, start=1)]


def visible_queue(queue: dict[str, Any], reveal: bool) -> dict[str, Any]:
    """A queue row as a viewer may see it (blind: without the strata sizes)."""
    return dict(queue) if reveal else {k: v for k, v in queue.items()
                                       if k not in JUDGE_QUEUE_FIELDS}


def visible_counts(counts: dict[str, Any], reveal: bool) -> dict[str, Any]:
    """Dashboard figures as a viewer may see them (blind: no progress by stratum, no recall
    watch and no agreement with the judge, which would tell, after one review and a reload,
    what the judge made of the item just reviewed)."""
    return dict(counts) if reveal else {k: v for k, v in counts.items()
                                        if k not in ("strata", "recall_watch", "judge_agreement")}


def allowed_filter(stratum: str | None, reveal: bool) -> None:
    """Refuse filtering by stratum in a blind view (it would tell the judge's label)."""
    if stratum is not None and not reveal:
        from judge.review.queue import QueueError

        raise QueueError("filtering by stratum tells the judge's label; blind views allow it "
                         "only with --reveal (reveal_judge)")
