"""The JSON API under ``/v1``. Every route needs a bearer token; what it may do depends on
the token's role (reviewer < adjudicator < admin). Queue and item responses are blind unless
the server runs with ``reveal_judge``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from judge.reading import answer_view
from judge.records import AnswerRecord
from judge.records.strictjson import JSONLimitError, loads
from judge.review.aliases import person
from judge.review.assignment import ItemTaken, guard, release
from judge.review.blind import allowed_filter, visible_counts, visible_items, visible_queue
from judge.review.gold_export import gold_lines
from judge.review.queue import (
    DEFAULT_PRIORITY,
    STRATA,
    QueueError,
    QueueOptions,
    build_queue,
    get_item,
    get_queue,
    needs_review,
    priority_order,
    queue_items,
    queues,
    state_counts,
)
from judge.review.reviews import (
    MAX_NOTE_CHARS,
    MAX_REASON_CHARS,
    MAX_TIME_SPENT_MS,
    REVIEW_SUBTYPES,
    STATES,
    ReviewError,
    adjudicate,
    check_label,
    current_reviews,
    record_review,
    review_history,
)
from judge.service.auth import RoleFirst, needs
from judge.service.settings import Identity, ServiceSettings
from judge.service.stats import dashboard_counts
from judge.service.views import item_view
from judge.store import Store
from judge.store.base import StoreError
from judge.verdicts import LABELS

#: a route declaring a role (``openapi_extra=needs(role)``) checks it before reading anything
router = APIRouter(prefix="/v1", route_class=RoleFirst)

LabelIn = Literal["supported", "contradicted", "not_in_source", "not_verifiable"]
SubtypeIn = Literal[REVIEW_SUBTYPES]  # type: ignore[valid-type]
assert tuple(LabelIn.__args__) == LABELS  # type: ignore[attr-defined]


def settings_of(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


def identity(request: Request) -> Identity:
    """The caller (found already when the route declares a role: :class:`RoleFirst`)."""
    known: Identity | None = getattr(request.state, "identity", None)
    if known is not None:
        return known
    who: Identity = request.app.state.auth.api_identity(request)
    return who


def open_store(request: Request) -> Iterator[Store]:
    """One connection per request: sqlite connections are never shared between requests."""
    store = Store.open(settings_of(request).db_path)
    try:
        yield store
    finally:
        store.close()


User = Annotated[Identity, Depends(identity)]
Db = Annotated[Store, Depends(open_store)]


def bad_request(exc: Exception, status: int = 422) -> HTTPException:
    return HTTPException(status, str(exc))


# -- models -----------------------------------------------------------------------------------


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReviewIn(Strict):
    """A reviewer's label for one queue item (or a claim id)."""

    item_id: str | None = Field(default=None, max_length=200)
    claim_id: str | None = Field(default=None, max_length=200)
    label: LabelIn
    subtype: SubtypeIn | None = Field(
        default=None, description="required unless the label is 'supported'"
    )
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    time_spent_ms: int | None = Field(default=None, ge=0, le=MAX_TIME_SPENT_MS)

    @model_validator(mode="after")
    def _target_and_subtype(self) -> ReviewIn:
        if (self.item_id is None) == (self.claim_id is None):
            raise ValueError("give exactly one of item_id or claim_id")
        check_label(self.label, self.subtype)
        return self


class AdjudicationIn(Strict):
    item_id: str = Field(max_length=200)
    label: LabelIn
    subtype: SubtypeIn | None = None
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)

    @model_validator(mode="after")
    def _subtype(self) -> AdjudicationIn:
        check_label(self.label, self.subtype)
        return self


class QueueIn(Strict):
    run_ids: list[str] | None = Field(default=None, max_length=1000)
    all_runs: bool = False
    sample_rate: float = Field(default=0.1, ge=0.0, le=1.0)
    min_sample: int = Field(default=20, ge=0, le=1_000_000)
    seed: int = 0
    double_fraction: float = Field(default=0.1, ge=0.0, le=1.0)
    priority: list[str] | None = Field(default=None, description=", ".join(DEFAULT_PRIORITY))
    order: Literal["risk", "priority"] = Field(
        default="risk",
        description="risk: flagged items by the judge's probability that the claim is not "
        "supported, highest first (unrated items and defects a check proved come first); "
        "priority: by category alone",
    )
    target_recall: float | None = Field(
        default=None, gt=0.0, lt=1.0, description="share of problem claims the queue must "
        "catch; the threshold comes from the operating point set from human gold for it "
        "(default: the service config's [review] target_recall)")
    confidence: float | None = Field(default=None, gt=0.0, lt=1.0,
                                     description="confidence of the stated recall")
    informative_share: float | None = Field(
        default=None, ge=0.0, lt=1.0, description="share of the queue given to passed claims "
        "nearest the threshold")


# -- judging ----------------------------------------------------------------------------------


def _judge_one(settings: ServiceSettings, store: Store, record: AnswerRecord) -> dict[str, Any]:
    from judge.api import RecordsError, RunStopped, judge_as

    try:
        results = judge_as("api", [record], config=settings.judge_config, db=store)
    except RecordsError as exc:
        raise HTTPException(409, exc.problems[0].reason) from exc
    except RunStopped as exc:  # the provider keeps failing: nothing was stored as judged
        raise HTTPException(503, f"the judge model is unavailable: {exc}") from exc
    if results[0].status == "rejected":  # e.g. another run stored the id with other content
        raise HTTPException(409, results[0].error or "the record was rejected")
    return _answer_verdicts(store, record.answer_id, results.summary.judge_version)


def _answer_verdicts(store: Store, answer_id: str, version: str | None) -> dict[str, Any]:
    view = answer_view(store, answer_id, version)
    if view is None:
        raise HTTPException(404, f"no answer {answer_id!r}")
    return {
        "answer_id": answer_id,
        "refused": view.refused,
        "verdicts": [v.model_dump(mode="json", include=_VERDICT_FIELDS) for v in view.verdicts],
    }


#: What the service shows of a verdict (not the calls behind it, nor the run).
_VERDICT_FIELDS = {
    "claim_id", "claim", "citations", "label", "subtype", "evidence", "rationale", "checks",
    "strength", "support", "review", "review_reasons", "error", "judge_version", "rule",
    "is_abstention",
}


async def strict_json(request: Request, user: User) -> None:
    """The body under the JSONL reader's limits: duplicate keys, NaN and oversized numbers,
    which the framework's parser accepts, are refused with the reason (after authentication:
    without a token the answer stays 401)."""
    try:
        loads((await request.body()).decode("utf-8"))
    except (JSONLimitError, UnicodeDecodeError) as exc:
        raise HTTPException(422, f"the body is not strict JSON: {exc}") from exc


@router.post("/judge", tags=["judge"], summary="Judge one answer record synchronously",
             dependencies=[Depends(strict_json)], openapi_extra=needs("admin"))
def judge_answer(record: AnswerRecord, request: Request, user: User, store: Db) -> dict[str, Any]:
    """Runs the pipeline with the server's judge config and stores the result (admin)."""
    return _judge_one(settings_of(request), store, record)


@router.post(
    "/runs", status_code=202, tags=["judge"],
    summary="Submit a batch (JSONL body, one answer record per line); poll /v1/runs/{run_id}",
    openapi_extra=needs("admin"),
)
async def submit_batch(request: Request, user: User) -> dict[str, Any]:
    settings = settings_of(request)
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > settings.max_batch_bytes:
            raise HTTPException(413, f"batch exceeds {settings.max_batch_bytes} bytes")
    if not bytes(body).strip():
        raise HTTPException(422, "the body is empty: send JSONL, one answer record per line")
    job = await run_in_threadpool(request.app.state.jobs.submit, bytes(body))
    return {**job, "status": "running", "poll": f"/v1/runs/{job['run_id']}"}


@router.get("/runs/{run_id:path}", tags=["judge"], summary="A run's status and summary",
            openapi_extra=needs("admin"))
def get_run(run_id: str, request: Request, user: User, store: Db) -> dict[str, Any]:
    try:
        run = store.run(run_id)
    except StoreError as exc:
        raise HTTPException(404, f"no run {run_id!r}") from exc
    done = store.run_answer_count(run_id)
    jobs = request.app.state.jobs
    return {
        "run_id": run_id, "status": run["status"], "judge_version": run["judge_version"],
        "started_at": run["started_at"], "finished_at": run["finished_at"],
        "answers_done": done, "in_progress": jobs.active(run_id),
        "error": jobs.error(run_id),
        "summary": json.loads(run["stats"]) if run["stats"] else None,
    }


@router.get("/answers/{answer_id:path}/verdicts", tags=["judge"], summary="An answer's verdicts",
            openapi_extra=needs("admin"))
def answer_verdicts(
    answer_id: str, user: User, store: Db, judge_version: str | None = None
) -> dict[str, Any]:
    """The judge's labels: admin only, so reviewers stay blind."""
    return _answer_verdicts(store, answer_id, judge_version)


# -- queue ------------------------------------------------------------------------------------


@router.post("/queues", status_code=201, tags=["queue"], summary="Build a review queue",
             dependencies=[Depends(strict_json)], openapi_extra=needs("admin"))
def create_queue(body: QueueIn, request: Request, user: User, store: Db) -> dict[str, Any]:
    review = settings_of(request).judge_config.review
    try:
        run_ids = [r["id"] for r in store.runs()] if body.all_runs else body.run_ids
        options = QueueOptions(
            sample_rate=body.sample_rate, min_sample=body.min_sample, seed=body.seed,
            double_fraction=review.double_fraction(body.double_fraction),
            priority=priority_order(body.priority),
            order=body.order,
            target_recall=body.target_recall or review.target_recall,
            confidence=body.confidence or review.confidence,
            informative_share=(review.informative_share if body.informative_share is None
                               else body.informative_share),
        )
        return build_queue(store, run_ids, options, created_by=user.annotator).as_dict()
    except QueueError as exc:
        raise bad_request(exc) from exc


@router.get("/queues", tags=["queue"], summary="List review queues")
def list_queues(request: Request, user: User, store: Db) -> list[dict[str, Any]]:
    """Blind unless the server runs with ``reveal_judge``: the strata sizes (how many claims
    the judge passed or flagged) are left out."""
    keys = ["id", "created_at", "run_ids", "seed", "sample_rate", "min_sample",
            "double_fraction", "items", "strata", "operating_points", "informative_share"]
    reveal = settings_of(request).reveal_judge
    return [{k: v for k, v in visible_queue(q, reveal).items() if k in keys}
            for q in queues(store)]


#: What a blind queue listing shows of an item (:mod:`judge.review.blind`): nothing that
#: tells the judge's label (no stratum, reasons, category, risk order, position or weight);
#: ``number`` is the item's place in the caller's own shuffled order.
BLIND_ITEM = ("item_id", "queue_id", "claim_id", "answer_id", "kind", "reviews_required",
              "state", "number")


def _item_summary(item: dict[str, Any], reveal: bool) -> dict[str, Any]:
    out = {
        "item_id": item["id"], "queue_id": item["queue_id"], "claim_id": item["claim_id"],
        "answer_id": item["answer_id"], "kind": item["kind"],
        "reviews_required": item["reviews_required"], "state": item["state"],
        "number": item["number"],
    }
    if reveal:
        out.update({
            "priority": item["position"], "reasons": item["reasons"],
            "category": item["category"], "stratum": item["stratum"],
            "stratum_size": item["stratum_size"], "sample_size": item["sample_size"],
            "weight": item["weight"],
        })
    return out


class ItemPageParams:
    """The filters and the page of a queue's item list (query parameters of both routes)."""

    def __init__(
        self,
        status: Literal[STATES] | None = None,  # type: ignore[valid-type]
        stratum: Literal[STRATA] | None = None,  # type: ignore[valid-type]
        mine: bool = Query(default=False, description="only items that still need my review"),
        limit: int = Query(default=100, ge=1, le=1000),
        offset: int = Query(default=0, ge=0),
    ) -> None:
        self.status, self.stratum, self.mine = status, stratum, mine
        self.limit, self.offset = limit, offset


ItemPage = Annotated[ItemPageParams, Depends()]


@router.get("/queues/{queue_id:path}/items", tags=["queue"],
            summary="List and filter a queue's items ('latest': the newest queue)")
def list_queue_items(
    queue_id: str, request: Request, user: User, store: Db, page: ItemPage
) -> dict[str, Any]:
    """Blind unless the server runs with ``reveal_judge`` (whatever the caller's role): items
    come in a neutral order (by item id) without stratum, reasons, category, position or
    weight, and filtering by stratum is refused (it would tell the judge's label)."""
    return list_queue(request, user, store, page, None if queue_id == "latest" else queue_id)


@router.get("/queue", tags=["queue"], deprecated=True,
            summary="Items of a queue (use /v1/queues/{queue_id}/items)")
def list_queue(
    request: Request,
    user: User,
    store: Db,
    page: ItemPage,
    queue_id: str | None = Query(default=None, max_length=100),
) -> dict[str, Any]:
    """Blind unless the server runs with ``reveal_judge`` (whatever the caller's role): items
    come in the caller's own shuffled order (numbered in it) without stratum, reasons,
    category, position or weight, and filtering by stratum is refused (it would tell the
    judge's label): :mod:`judge.review.blind`."""
    status, stratum, mine = page.status, page.stratum, page.mine
    reveal = settings_of(request).reveal_judge
    try:
        allowed_filter(stratum, reveal)
    except QueueError as exc:
        raise HTTPException(403, f"{exc}; the server runs blind (reveal_judge is off)"
                            ) from exc
    try:
        queue = get_queue(store, queue_id)
        everything = queue_items(store, queue["id"])
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    me = person(store, user.annotator)
    items = [
        i for i in visible_items(store, queue["id"], everything, reveal=reveal, viewer=me)
        if (status is None or i["state"] == status) and (stratum is None or i["stratum"] == stratum)
        and (not mine or needs_review(i, me))
    ]
    return {
        "queue_id": queue["id"], "total": len(items), "offset": page.offset,
        "states": state_counts(everything),
        "items": [_item_summary(i, reveal) for i in items[page.offset:page.offset + page.limit]],
    }


@router.get("/items/{item_id:path}", tags=["queue"], summary="One item as a reviewer sees it")
def get_queue_item(item_id: str, request: Request, user: User, store: Db) -> dict[str, Any]:
    return queue_item(item_id, request, user, store)


@router.get("/queue/items/{item_id:path}", tags=["queue"], deprecated=True,
            summary="One item (use /v1/items/{item_id})")
def queue_item(item_id: str, request: Request, user: User, store: Db) -> dict[str, Any]:
    try:
        item = get_item(store, item_id)
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    me = person(store, user.annotator)
    mine = [r for r in current_reviews(store, [item["subject"]]).get(item["subject"], [])
            if r["annotator"] == me]
    return item_view(store, item, settings_of(request).reveal_judge, mine[0] if mine else None)


# -- reviews ----------------------------------------------------------------------------------


@router.post("/reviews", status_code=201, tags=["review"], summary="Submit a review",
             dependencies=[Depends(strict_json)])
def submit_review(body: ReviewIn, request: Request, user: User, store: Db) -> dict[str, Any]:
    """Recorded with the token's identity as annotator and the server's guideline version."""
    try:
        if body.item_id is not None:
            item = get_item(store, body.item_id)
        else:
            # ReviewIn's validator gives exactly one of item_id and claim_id
            found = (
                store.latest_queue_item_of_claim(body.claim_id)
                if body.claim_id is not None
                else None
            )
            if found is None:
                raise QueueError(f"claim {body.claim_id!r} is in no review queue")
            item = found
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    me = person(store, user.annotator)
    held = get_item(store, item["id"])
    try:
        guard(store, held["queue_id"], held, me)  # not while others review its last slot
        row = record_review(
            store, item["subject"], user.annotator, body.label, subtype=body.subtype,
            note=body.note, guideline_version=settings_of(request).guideline_version,
            time_spent_ms=body.time_spent_ms, queue_id=item["queue_id"], item_id=item["id"],
            origin="api",
        )
    except ItemTaken as exc:
        raise HTTPException(409, str(exc)) from exc
    except ReviewError as exc:
        raise bad_request(exc) from exc
    finally:
        release(store, held, me)
    return {"review": row, "state": get_item(store, item["id"])["state"]}


@router.get("/reviews", tags=["review"], summary="Review history of a subject")
def list_reviews(
    user: User, store: Db, subject: str = Query(max_length=300)
) -> list[dict[str, Any]]:
    """Reviewers see their own rows only; adjudicators and admins see everyone's."""
    rows = review_history(store, subject)
    if not user.can("adjudicator"):
        aliases = store.reviewer_alias_map()
        me = aliases.get(user.annotator, user.annotator)
        rows = [r for r in rows if aliases.get(r["annotator"], r["annotator"]) == me]
    return rows


@router.post("/adjudications", status_code=201, tags=["review"], summary="Decide a disagreement",
             dependencies=[Depends(strict_json)], openapi_extra=needs("adjudicator"))
def submit_adjudication(
    body: AdjudicationIn, request: Request, user: User, store: Db
) -> dict[str, Any]:
    try:
        item = get_item(store, body.item_id)
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    try:
        row = adjudicate(
            store, item["subject"], user.annotator, body.label, body.subtype, body.reason,
            guideline_version=settings_of(request).guideline_version, queue_id=item["queue_id"],
        )
    except ReviewError as exc:
        raise HTTPException(409 if "reviewed" in str(exc) or "agree" in str(exc) else 422,
                            str(exc)) from exc
    return {"adjudication": row, "state": get_item(store, item["id"])["state"]}


@router.get("/gold", tags=["review"], summary="Gold labels (JSONL, as `judge gold export`)",
            openapi_extra=needs("adjudicator"))
def gold(
    request: Request, user: User, queue_id: str | None = None,
    include_pending_second: bool = False,
) -> StreamingResponse:
    store = Store.open(settings_of(request).db_path)
    try:
        lines = [json.dumps(x, ensure_ascii=False) + "\n"
                 for x in gold_lines(store, queue_id, include_pending_second)]
    finally:
        store.close()
    return StreamingResponse(iter(lines), media_type="application/x-ndjson")


@router.get("/queues/{queue_id:path}/recall", tags=["queue"],
            summary="The recall a queue's reviews show, against the recall it states",
            openapi_extra=needs("admin"))
def queue_recall(queue_id: str, user: User, store: Db) -> dict[str, Any]:
    """Admin only (the per-stratum figures would tell a reviewer the stratum of an item just
    reviewed). ``status``: ok, below, significantly_below or not_estimable; ``message`` says
    it in words. ``queue_id`` may be ``latest``."""
    from judge.review.triage import recall_watch

    try:
        queue = get_queue(store, None if queue_id == "latest" else queue_id)
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    watch = recall_watch(store, queue["id"])
    return {"operating_points": queue["operating_points"], **(watch or {})}


@router.get("/stats", tags=["review"], summary="Counts by label, subtype, reviewer and state")
def stats(request: Request, user: User, store: Db, queue_id: str | None = None
          ) -> dict[str, Any]:
    """Human labels only. Blind unless the server runs with ``reveal_judge``: the progress by
    stratum is left out (reviewing one item and reading it again would tell that item's
    stratum, hence the judge's label)."""
    try:
        counts = dashboard_counts(store, queue_id)
    except QueueError as exc:
        raise HTTPException(404, str(exc)) from exc
    return visible_counts(counts, settings_of(request).reveal_judge)
