"""Dashboard figures: human labels by label, subtype and reviewer; queue progress by stratum;
per label, agreement between people and between the judge and people. The judge's labels
enter only the judge-versus-human figures, which a blind view leaves out
(:func:`judge.review.blind.visible_counts`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import median
from typing import Any

from calibration.stats import wilson_interval
from judge.review.queue import get_queue, queue_items, state_counts
from judge.review.reviews import current_reviews
from judge.review.triage import recall_watch
from judge.store import Store
from judge.verdicts import LABELS


def dashboard_counts(store: Store, queue_id: str | None = None) -> dict[str, Any]:
    queue = get_queue(store, queue_id)
    items = queue_items(store, queue["id"])
    reviews = current_reviews(store, [i["subject"] for i in items])
    labels: Counter[str] = Counter()
    subtypes: Counter[str] = Counter()
    per_reviewer: dict[str, Counter[str]] = defaultdict(Counter)
    times: dict[str, list[int]] = defaultdict(list)
    for rows in reviews.values():
        for r in rows:
            labels[r["label"]] += 1
            if r["subtype"]:
                subtypes[r["subtype"]] += 1
            per_reviewer[r["annotator"]][r["label"]] += 1
            if r["time_spent_ms"] is not None:
                times[r["annotator"]].append(r["time_spent_ms"])
    strata: dict[str, Counter[str]] = defaultdict(Counter)
    for item in items:
        strata[item["stratum"]]["items"] += 1
        strata[item["stratum"]]["reviewed"] += int(item["state"] != "pending")
    design = queue["strata"] or {}
    judged = {i: t["label"] for i, t in store.queue_item_texts(queue["id"]).items()}
    firsts = {i["subject"]: reviews[i["subject"]][0]["label"]
              for i in items if reviews.get(i["subject"])}
    pairs = [(rows[0]["label"], rows[1]["label"]) for rows in reviews.values() if len(rows) >= 2]
    return {
        "queue_id": queue["id"],
        "created_at": queue["created_at"],
        "operating_points": queue.get("operating_points") or [],
        "recall_watch": recall_watch(store, queue["id"]),
        "seed": queue["seed"],
        "items": len(items),
        "states": state_counts(items),
        "labels": {label: labels.get(label, 0) for label in LABELS},
        "subtypes": dict(sorted(subtypes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "reviewers": [
            {
                "annotator": name, "reviews": sum(counts.values()),
                "labels": {label: counts.get(label, 0) for label in LABELS},
                "median_seconds": round(median(times[name]) / 1000, 1) if times[name] else None,
            }
            for name, counts in sorted(per_reviewer.items())
        ],
        "strata": [
            {
                "stratum": name, **design.get(name, {}),
                "in_queue": strata[name]["items"], "reviewed": strata[name]["reviewed"],
            }
            for name in design
        ],
        "human_agreement": label_agreement(pairs),
        "judge_agreement": label_agreement(
            [(firsts[i["subject"]], judged[i["id"]]) for i in items
             if i["kind"] == "claim" and i["subject"] in firsts and judged.get(i["id"])]),
    }


#: Confidence of the dashboard's agreement intervals.
AGREEMENT_CONFIDENCE = 0.95


def label_agreement(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per label, of the pairs where either side said it, the share where both did, with a
    Wilson interval (:data:`AGREEMENT_CONFIDENCE`): between two people (the first two
    reviews of an item reviewed twice), or between a person (an item's first review) and the
    judge (``judge_error`` never agrees)."""
    out = []
    for label in LABELS:
        either = [a == b for a, b in pairs if label in (a, b)]
        estimate = wilson_interval(sum(either), len(either), AGREEMENT_CONFIDENCE)
        out.append({"label": label, "both": sum(either), "either": len(either),
                    "agreement": estimate.value if either else None,
                    "low": estimate.ci_low if either else None,
                    "high": estimate.ci_high if either else None})
    return out
