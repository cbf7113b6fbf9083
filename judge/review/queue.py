"""The review queue: what people should read, in which order, and what each item stands for.

A queue is built from one or more runs. It holds every claim the judge flagged (a label other
than ``supported``, a failed deterministic check, a ``judge_error``, a missing citation, weak
evidence), every answer the judge refused to grade (self-grading), and a seeded random sample
of the claims that passed, so the pass rate can be estimated.

Which claims are flagged follows the judge version's **operating point**
(:mod:`judge.review.triage`): a claim whose flag score (its support, or the stacked score the
point names) is below the threshold set from human gold for a target recall, or that the
program forces (a failed check, a
``judge_error``, an uncovered sentence ...). For a judge that gives no support score, its
labels and review reasons flag (a label other than ``supported``, a failed check, a missing
citation, weak evidence).

Strata partition every claim and refused answer in the queue's scope, so that estimates from
the reviewed items can be weighted back to the whole (stratum size / sample size):

- ``flagged``: claims the operating point (or the judge or a check) flagged: all included,
  weight 1;
- ``judge_error``: claims the judge could not label: all included, weight 1;
- ``refused``: answers refused for self-grading (reviewed as a whole): all included, weight 1;
- ``near_threshold``: the passed claims nearest the threshold, the reviews that teach the
  most (``informative_share`` of the queue, default 10%): all of them included, weight 1;
- ``passed``: the other passed claims: ``sample_size`` of ``stratum_size`` drawn with the
  recorded seed; each sampled item weighs ``stratum_size / sample_size``.

Every item records its inclusion probability (1 / weight): the near-threshold stratum is a
census of claims chosen by their score, known before any review, so weighted estimates stay
unbiased.

Every item also has a *category*, its most urgent reason under the configured priority order,
and a ``position`` (1 = review first). The reading order (``order``) is ``risk`` by default:
flagged items by the judge's probability that the claim is not supported, highest first
(:func:`risk`: what the judge cannot rate and defects a check proved come first; categories
break ties), then the sampled passes; ``priority`` orders by category
alone. Measured on gold, the risk order puts far more of the human-rejected claims in the first
quarter or half of the queue (the ``queue_budget`` figures of a calibration report), which is
what counts when people cannot read the whole queue. Categories and reasons name the judge's
label, so blind views show neither (:mod:`judge.review.blind`).
"""

from __future__ import annotations

import json
import random
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.errors import JudgeError
from judge.hashing import content_hash
from judge.labels import JUDGE_ERROR, Label
from judge.review.design import STRATA as STRATA
from judge.review.design import draw, reading_key
from judge.review.design import sample_size as sample_size
from judge.review.reviews import (
    STATES,
    answer_subject,
    current_adjudications,
    current_reviews,
    subject_state,
)
from judge.review.triage import ActivePoint, PointFinder, proposals
from judge.review.triage import claim_reasons as claim_reasons

if TYPE_CHECKING:  # the store (sqlite-utils) is imported by what uses it: the CLI starts fast
    from judge.store import Store

#: Categories in the default priority order (first = most urgent).
DEFAULT_PRIORITY: tuple[str, ...] = (
    "contradicted",
    "numeric_or_version_error",
    "misattribution",
    "not_in_source",
    "failed_check",
    "judge_error",
    "refused",
    "not_verifiable",
    "missing_citation",
    "weak_evidence",
    "low_support",
    "other_flag",
    "near_threshold",
    "sampled_pass",
)
#: Reading orders of a queue (see the module docstring); the first is the default.
ORDERS: tuple[str, ...] = ("risk", "priority")

CATEGORY_HELP = {
    "contradicted": "the judge labelled the claim contradicted",
    "numeric_or_version_error": "the judge's subtype is numeric_or_version_error",
    "misattribution": "the judge's subtype is misattribution (true per another source)",
    "not_in_source": "the judge labelled the claim not_in_source",
    "failed_check": "a deterministic check failed; the reasons name it (check:quote_found: "
                    "a quote is not in its source; check:numbers_match: numbers disagree; "
                    "check:citation_exists, check:json_path_resolves; invented_quote)",
    "judge_error": "the judge could not produce a label (fail closed)",
    "refused": "the answer was not judged: self-grading refused",
    "not_verifiable": "the judge labelled the claim not_verifiable",
    "missing_citation": "the claim cites nothing",
    "weak_evidence": "supported, but the computed evidence strength is weak",
    "low_support": "the judge's support score is below the operating point's threshold",
    "near_threshold": "a passed claim just above the threshold: read to learn where it lies",
    "other_flag": "flagged for another reason",
    "sampled_pass": "a random sample of the claims that passed",
}

DEFAULT_SAMPLE_RATE = 0.1
DEFAULT_MIN_SAMPLE = 20
DEFAULT_DOUBLE_FRACTION = 0.1
DEFAULT_SEED = 0


class QueueError(JudgeError, ValueError):
    """A queue request that cannot be honoured; the message says why."""


# -- options --------------------------------------------------------------------------------------


def priority_order(names: Sequence[str] | str | None) -> tuple[str, ...]:
    """The full priority order: the named categories first (in the order given), then the
    rest in the default order."""
    if names is None:
        return DEFAULT_PRIORITY
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in names if n not in DEFAULT_PRIORITY]
    if unknown:
        raise QueueError(
            f"unknown priority categor{'y' if len(unknown) == 1 else 'ies'} "
            f"{', '.join(map(repr, unknown))}; known: {', '.join(DEFAULT_PRIORITY)}"
        )
    dupes = [n for n, c in Counter(names).items() if c > 1]
    if dupes:
        raise QueueError(f"priority names {', '.join(dupes)} more than once")
    return tuple(names) + tuple(n for n in DEFAULT_PRIORITY if n not in names)


@dataclass(frozen=True)
class QueueOptions:
    sample_rate: float = DEFAULT_SAMPLE_RATE
    min_sample: int = DEFAULT_MIN_SAMPLE
    seed: int = DEFAULT_SEED
    double_fraction: float = DEFAULT_DOUBLE_FRACTION
    priority: tuple[str, ...] = DEFAULT_PRIORITY
    order: str = ORDERS[0]
    #: the operating point's target recall and confidence (``[review]`` settings)
    target_recall: float = 0.9
    confidence: float = 0.9
    #: the share of the queue given to passed claims nearest the threshold
    informative_share: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 < self.target_recall < 1.0:
            raise QueueError(f"target recall {self.target_recall} is outside (0, 1)")
        if not 0.0 < self.confidence < 1.0:
            raise QueueError(f"confidence {self.confidence} is outside (0, 1)")
        if not 0.0 <= self.informative_share < 1.0:
            raise QueueError(f"informative share {self.informative_share} is outside [0, 1)")
        if self.order not in ORDERS:
            raise QueueError(f"unknown queue order {self.order!r}; known: {', '.join(ORDERS)}")
        if not 0.0 <= self.sample_rate <= 1.0:
            raise QueueError(f"sample rate {self.sample_rate} is outside 0..1")
        if self.min_sample < 0:
            raise QueueError(f"minimum sample size {self.min_sample} is negative")
        if not 0.0 <= self.double_fraction <= 1.0:
            raise QueueError(f"double-review fraction {self.double_fraction} is outside 0..1")
        priority_order(list(self.priority))


# -- classification -------------------------------------------------------------------------------


def categories(row: dict[str, Any], reasons: list[str]) -> set[str]:
    """Every category a claim falls under (its item category is the most urgent one)."""
    label, subtype = row["label"], row.get("subtype")
    found: set[str] = set()
    if label == JUDGE_ERROR:
        found.add("judge_error")
    elif label != Label.SUPPORTED:
        found.add(label)
        if subtype in ("numeric_or_version_error", "misattribution"):
            found.add(subtype)
    for reason in reasons:
        if reason.startswith("check:") or reason == "invented_quote":
            found.add("failed_check")
        elif reason in ("missing_citation", "weak_evidence"):
            found.add(reason)
        elif not reason.startswith("label:") and reason != JUDGE_ERROR:
            found.add("other_flag")
    return found


def risk(support: float | None, reasons: Iterable[str] = ()) -> float:
    """How likely the judge thinks a claim is *not* supported: ``1 - support`` (its
    probability of ``supported``), or 1 when it gives none (judge errors, refused answers,
    labels the program decided, the structured strategies): what the judge cannot rate is
    read first (fail closed). A claim whose review ``reasons`` show a :func:`verified_defect`
    is also 1: the program proved something wrong with it, whatever the model thinks."""
    return 1.0 if support is None or verified_defect(reasons) else 1.0 - float(support)


#: Failed checks that prove a defect by exact lookup. ``numbers_match`` is left out: a number
#: the source writes differently ("1.5 million", "1,500,000") fails it too, and on the check
#: claims reading its failures first caught fewer human-rejected claims early
#: (research/README.md).
EXACT_CHECKS: frozenset[str] = frozenset(
    {"check:citation_exists", "check:json_path_resolves", "check:quote_found"}
)


def verified_defect(reasons: Iterable[str]) -> bool:
    """Whether the program itself proved a defect: a cited source that does not exist, a JSON
    path that does not resolve, a quote that is not in the source (:data:`EXACT_CHECKS`), or
    an invented evidence quote."""
    return any(r in EXACT_CHECKS or r == "invented_quote" for r in reasons)


#: The operating point of a verdict row (None: flag by labels and reasons).
PointOf = Callable[[dict[str, Any]], "ActivePoint | None"]


def classify(row: dict[str, Any], rank: dict[str, int], point: ActivePoint | None = None
             ) -> tuple[list[str], str, str]:
    """(reasons, stratum, category) of a stored claim verdict row; ``rank`` maps each
    category to its place in the priority order. With an operating ``point`` that has a
    threshold and a row with a support score, the point decides whether it is flagged
    (:mod:`judge.review.triage`); otherwise its labels and reasons do."""
    reasons = claim_reasons(row)
    found = categories(row, reasons)
    flagged = point.flags(point.score_of(row, reasons)) if point is not None else None
    if flagged is None:
        flagged = bool(found) or bool(row["review"])
    elif flagged:
        found = found or {"low_support"}
    if not flagged:
        return reasons, "passed", "sampled_pass"
    found = found or {"other_flag"}
    stratum = "judge_error" if row["label"] == JUDGE_ERROR else "flagged"
    return reasons, stratum, min(found, key=rank.__getitem__)


def reading_positions(rows: Iterable[dict[str, Any]], order: str = ORDERS[0],
                      priority: Sequence[str] = DEFAULT_PRIORITY,
                      point_of: PointOf | None = None) -> dict[str, int]:
    """Where each flagged claim of ``rows`` (stored verdict rows of one judge version) comes
    in the reading order of a queue over them, by claim id (1 = read first). Passed claims
    have no position: the queue only samples them to estimate the pass rate. ``point_of``
    gives each row's operating point (default: flag by labels and reasons)."""
    rank = {name: i for i, name in enumerate(priority_order(list(priority)))}
    keyed = []
    for row in rows:
        reasons, stratum, category = classify(row, rank,
                                              point_of(row) if point_of else None)
        if stratum != "passed":
            keyed.append((reading_key(order, stratum, risk(row.get("support"), reasons),
                                      rank[category], row["answer_id"], row["idx"],
                                      row["claim_id"]),
                          row["claim_id"]))
    keyed.sort()
    return {claim_id: position for position, (_, claim_id) in enumerate(keyed, start=1)}


# -- building -------------------------------------------------------------------------------------


@dataclass
class Candidate:
    subject: str
    kind: str  # "claim" | "answer"
    answer_id: str
    claim_id: str | None
    verdict_id: str | None
    judge_version: str | None
    run_id: str | None
    reasons: list[str]
    stratum: str
    category: str
    rank: int
    idx: int = 0
    risk: float = 1.0  # see risk()
    support: float | None = None
    #: the flag score under the claim's operating point (its support without a spec)
    score: float | None = None

    def __post_init__(self) -> None:
        if self.score is None:
            self.score = self.support


@dataclass
class QueueSummary:
    queue_id: str
    run_ids: list[str]
    seed: int
    items: int
    strata: dict[str, dict[str, Any]]
    categories: dict[str, int]
    double_review: int
    priority: list[str] = field(default_factory=list)
    order: str = ORDERS[0]
    #: the operating points that decided the flags (:meth:`ActivePoint.as_dict`)
    operating_points: list[dict[str, Any]] = field(default_factory=list)
    informative_share: float = 0.0
    #: domains with enough new reviews for `judge fit --domain` (:func:`refit_proposals`)
    proposals: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue_id": self.queue_id, "run_ids": self.run_ids, "seed": self.seed,
            "items": self.items, "strata": self.strata, "categories": self.categories,
            "double_review": self.double_review, "priority": self.priority,
            "order": self.order, "operating_points": self.operating_points,
            "informative_share": self.informative_share, "proposals": self.proposals,
        }


def _candidates(store: Store, run_ids: list[str], order: tuple[str, ...],
                point_of: PointFinder) -> list[Candidate]:
    rank = {name: i for i, name in enumerate(order)}
    by_subject: dict[str, Candidate] = {}
    for run_id in run_ids:
        rows = list(store.verdict_rows(run_id=run_id))
        point_of.prefetch(r["answer_id"] for r in rows)
        for row in rows:
            point = point_of(row)
            reasons, stratum, category = classify(row, rank, point)
            cand = Candidate(
                subject=row["claim_id"], kind="claim", answer_id=row["answer_id"],
                claim_id=row["claim_id"], verdict_id=row["id"],
                judge_version=row["judge_version"], run_id=row["run_id"], reasons=reasons,
                stratum=stratum, category=category, rank=rank[category], idx=row["idx"],
                risk=risk(row.get("support"), reasons), support=row.get("support"),
                score=point.score_of(row, reasons) if point is not None else row.get("support"),
            )
            prev = by_subject.get(cand.subject)
            # Across judge versions a claim is one item: its most urgent verdict wins.
            if prev is None or (cand.stratum != "passed", -cand.rank) > (
                prev.stratum != "passed", -prev.rank
            ):
                if prev is not None:
                    cand.reasons += [r for r in prev.reasons if r not in cand.reasons]
                    if prev.stratum != "passed":
                        cand.risk = max(cand.risk, prev.risk)
                by_subject[cand.subject] = cand
            elif cand.stratum != "passed":
                prev.reasons += [r for r in cand.reasons if r not in prev.reasons]
                prev.risk = max(prev.risk, cand.risk)
        for ra in store.run_answer_rows(run_id):
            if ra["status"] != "refused":
                continue
            subject = answer_subject(ra["answer_id"])
            by_subject[subject] = Candidate(
                subject=subject, kind="answer", answer_id=ra["answer_id"], claim_id=None,
                verdict_id=None, judge_version=store.run(run_id)["judge_version"], run_id=run_id,
                reasons=[f"refused: {ra['refused_reason']}"], stratum="refused",
                category="refused", rank=rank["refused"],
            )
    return list(by_subject.values())


def item_id(queue_id: str, subject: str) -> str:
    """An item's id: its queue and a digest of its subject, so the id tells nothing of the
    item's place in the reading order (queues built before this rule numbered their items
    ``<queue>-00001`` in reading order)."""
    return f"{queue_id}-{content_hash([queue_id, subject])[:12]}"


def build_queue(
    store: Store,
    run_ids: Sequence[str] | None = None,
    options: QueueOptions | None = None,
    created_by: str | None = None,
) -> QueueSummary:
    """Build and store a queue over ``run_ids`` (default: the latest run)."""
    from judge.store.base import StoreError, now

    options = options or QueueOptions()
    order = priority_order(list(options.priority))
    if not run_ids:
        latest = store.latest_run_id()
        if latest is None:
            raise QueueError("the store holds no runs; judge a batch first (`judge run`)")
        run_ids = [latest]
    run_ids = list(dict.fromkeys(run_ids))
    for run_id in run_ids:
        try:
            store.run(run_id)
        except StoreError as exc:
            raise QueueError(str(exc)) from exc
    from judge.config.review import ReviewSettings

    point_of = PointFinder(store, ReviewSettings(
        target_recall=options.target_recall, confidence=options.confidence,
        informative_share=options.informative_share))
    cands = _candidates(store, run_ids, order, point_of)
    chosen, strata = draw(cands, options, order)
    n_double = 0
    if options.double_fraction > 0 and chosen:
        n_double = max(1, round(options.double_fraction * len(chosen)))
    double = set(
        random.Random(f"{options.seed}:double").sample(sorted(c.subject for c in chosen), n_double)
    )
    stamp = now()
    queue_id = "q-" + content_hash([run_ids, options.seed, stamp, list(order)])[:12]
    versions = sorted({c.judge_version for c in chosen if c.judge_version})
    rows = []
    for position, c in enumerate(chosen, start=1):
        s = strata[c.stratum]
        rows.append({
            "id": item_id(queue_id, c.subject), "queue_id": queue_id, "position": position,
            "subject": c.subject, "kind": c.kind, "claim_id": c.claim_id,
            "answer_id": c.answer_id, "verdict_id": c.verdict_id,
            "judge_version": c.judge_version, "run_id": c.run_id, "category": c.category,
            "reasons": json.dumps(c.reasons, ensure_ascii=False), "stratum": c.stratum,
            "stratum_size": s["stratum_size"], "sample_size": s["sample_size"],
            "weight": s["weight"], "reviews_required": 2 if c.subject in double else 1,
            "inclusion_probability": s["sample_size"] / s["stratum_size"],
            "support": c.support,
        })
    store.insert_queue({
            "id": queue_id, "created_at": stamp, "run_ids": json.dumps(run_ids),
            "judge_versions": json.dumps(versions), "seed": options.seed,
            "sample_rate": options.sample_rate, "min_sample": options.min_sample,
            "double_fraction": options.double_fraction, "priority": json.dumps(list(order)),
            "ordering": options.order,
            "strata": json.dumps(strata), "items": len(rows), "created_by": created_by,
            "blind_seed": secrets.randbits(62),
            "operating_points": json.dumps(point_of.used(), ensure_ascii=False),
            "informative_share": options.informative_share,
        }, rows)
    return QueueSummary(
        queue_id=queue_id, run_ids=run_ids, seed=options.seed, items=len(rows), strata=strata,
        categories=dict(Counter(c.category for c in chosen)), double_review=len(double),
        priority=list(order), order=options.order, operating_points=point_of.used(),
        informative_share=options.informative_share,
        proposals=proposals(store, sorted({store.run(r)["judge_version"] for r in run_ids}),
                             point_of.settings),
    )


# -- reading --------------------------------------------------------------------------------------


def queues(store: Store) -> list[dict[str, Any]]:
    return store.queue_rows()


def get_queue(store: Store, queue_id: str | None = None) -> dict[str, Any]:
    """A queue by id, or the latest one."""
    row = store.queue_row(queue_id)
    if row is None and queue_id:
        raise QueueError(f"no queue {queue_id!r} in the store")
    if row is None:
        raise QueueError("the store holds no review queue; build one first "
                         "(judge.build_queue() in Python, `judge queue build` in a shell)")
    return row


def queue_items(
    store: Store,
    queue_id: str,
    status: str | None = None,
    stratum: str | None = None,
    category: str | None = None,
    needs_review_by: str | None = None,
) -> list[dict[str, Any]]:
    """Items in queue order with their review state and ``reviewers`` (the people who reviewed
    each, aliases resolved). ``needs_review_by`` (an annotator id) keeps the items that still
    need that person's review."""
    if status is not None and status not in STATES:
        raise QueueError(f"status {status!r} is not one of: {', '.join(STATES)}")
    if stratum is not None and stratum not in STRATA:
        raise QueueError(f"stratum {stratum!r} is not one of: {', '.join(STRATA)}")
    if category is not None and category not in DEFAULT_PRIORITY:
        raise QueueError(f"category {category!r} is not one of: {', '.join(DEFAULT_PRIORITY)}")
    rows = store.queue_item_rows(queue_id)
    if needs_review_by:
        who = store.reviewer_alias_map().get(needs_review_by, needs_review_by)
    subjects = [r["subject"] for r in rows]
    reviews = current_reviews(store, subjects)
    adjudications = current_adjudications(store, subjects)
    out = []
    for row in rows:
        revs = reviews.get(row["subject"], [])
        adjudication = adjudications.get(row["subject"])
        row["state"] = subject_state(revs, adjudication, row["reviews_required"])
        row["reviewers"] = [r["annotator"] for r in revs]
        if status and row["state"] != status:
            continue
        if stratum and row["stratum"] != stratum:
            continue
        if category and row["category"] != category:
            continue
        if needs_review_by and not needs_review(row, who):
            continue
        out.append(row)
    return out


def needs_review(item: dict[str, Any], annotator: str) -> bool:
    """Whether ``annotator`` (a person: resolve aliases first, :func:`judge.review.aliases.person`)
    should review this item (it has fewer reviews than required,
    none of them theirs, and it awaits no adjudication)."""
    return (
        item["state"] in ("pending", "needs_second_review")
        and annotator not in item["reviewers"]
    )


def item_verdict(store: Store, item: dict[str, Any]) -> dict[str, Any] | None:
    """The judge's verdict an item stands for, as a claim-level row: the current verdict of
    its claim by its judge version (a retry of a ``judge_error`` that kept the claim gives a
    new verdict under the same id, which supersedes the old one the way a new judge version
    does), else the verdict a retry replaced (``superseded`` set: the retry split the answer
    into other claims). The item and its reviews stay attached to the claim either way.
    None for a refused answer."""
    if item["kind"] != "claim" or not item.get("claim_id") or not item.get("judge_version"):
        return None
    return store.claim_verdict_row(item["judge_version"], item["claim_id"])


def get_item(store: Store, item_id: str) -> dict[str, Any]:
    row = store.queue_item_row(item_id)
    if row is None:
        raise QueueError(f"no queue item {item_id!r}")
    revs = current_reviews(store, [row["subject"]]).get(row["subject"], [])
    adj = current_adjudications(store, [row["subject"]]).get(row["subject"])
    row["state"] = subject_state(revs, adj, row["reviews_required"])
    row["reviewers"] = [r["annotator"] for r in revs]
    return row


def state_counts(items: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(i["state"] for i in items)
    return {s: counts.get(s, 0) for s in STATES}
