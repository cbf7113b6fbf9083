"""Server-rendered pages: login, the blind review page, the list of a queue's items (filters,
search, claims grouped by answer), the dashboard, adjudication.

Pages use the session cookie set by the login form; every form carries the session's CSRF
token. Forms are plain ``application/x-www-form-urlencoded`` posts that redirect (303), so the
page works without JavaScript; ``/static/review.js`` adds the keyboard shortcuts.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from judge.review.aliases import person
from judge.review.assignment import ItemTaken, assign_next, free_for, guard, release, take
from judge.review.blind import visible_counts, visible_items
from judge.review.queue import CATEGORY_HELP, QueueError, get_queue, needs_review, queue_items
from judge.review.reviews import (
    REVIEW_SUBTYPES,
    ReviewError,
    adjudicate,
    current_reviews,
    record_review,
)
from judge.service.auth import (
    LOGIN_CSRF_COOKIE,
    SESSION_COOKIE,
    Throttled,
    require_role,
)
from judge.service.sessions import Session
from judge.service.settings import ServiceSettings
from judge.service.stats import dashboard_counts
from judge.service.views import excerpts, item_view, segments
from judge.store import Store
from judge.text import script_lang
from judge.verdicts import LABELS

router = APIRouter(include_in_schema=False)
TEMPLATES = Path(__file__).parent / "templates"
env = Environment(
    loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
    trim_blocks=True, lstrip_blocks=True,
)


def lang_attr(text: str | None) -> Markup:
    """`` lang="zh-Hant"`` (``zh-Hans``, ``zh``, ``ja``) for an element holding Chinese or
    Japanese text, so the browser picks the script's glyphs and fonts (the page itself is
    ``lang="en"``); empty for other text. The tag is one of a fixed few, never input."""
    tag = script_lang(text or "")
    return Markup(f' lang="{tag}"') if tag else Markup("")


env.globals["lang"] = lang_attr

LABEL_KEYS = {"supported": "1", "contradicted": "2", "not_in_source": "3", "not_verifiable": "4"}
SUBTYPE_KEYS = {
    "unsupported_addition": "u", "misattribution": "m", "numeric_or_version_error": "n",
    "self_contradiction": "x", "overgeneralization": "g", "dropped_condition": "d",
    "partial_support": "p", "opinion": "o", "not_a_claim": "c",
}
assert set(SUBTYPE_KEYS) == set(REVIEW_SUBTYPES) and set(LABEL_KEYS) == set(LABELS)


def _settings(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


def render(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    session = ctx.pop("session", None)
    html = env.get_template(name).render(
        user=session.identity if session else None, csrf=session.csrf if session else "",
        label_keys=LABEL_KEYS, subtype_keys=SUBTYPE_KEYS, **ctx,
    )
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


async def form_data(request: Request) -> dict[str, str]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    body = await request.body()
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=50)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(400, "the form could not be read") from exc
    return {k: v[-1] for k, v in parsed.items()}


def _local(url: str | None) -> str:
    """Only same-site paths as redirect targets."""
    if not url or not url.startswith("/") or url.startswith("//") or "\\" in url:
        return "/review"
    return url


def _page_session(request: Request) -> Session:
    session: Session = request.app.state.auth.page_session(request)
    return session


def _store(request: Request) -> Store:
    return Store.open(_settings(request).db_path)


# -- login -------------------------------------------------------------------------------------


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/review", status_code=303)


def _login_page(request: Request, next_url: str, error: str | None = None,
                status: int = 200) -> HTMLResponse:
    """The login form with a fresh CSRF token, also set as a cookie (double submit): a login
    posted from another site carries no matching pair and is refused."""
    token = secrets.token_urlsafe(24)
    response = render(request, "login.html", status=status, next=next_url, error=error,
                      login_csrf=token)
    response.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict",
                        path="/login", secure=_settings(request).cookie_secure, max_age=3600)
    return response


@router.get("/login")
def login_form(request: Request, next: str = "/review") -> HTMLResponse:
    return _login_page(request, _local(next))


@router.post("/login")
async def login(request: Request) -> Response:
    form = await form_data(request)
    target = _local(form.get("next"))
    cookie, sent = request.cookies.get(LOGIN_CSRF_COOKIE, ""), form.get("csrf", "")
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        return _login_page(request, target, status=403,
                           error="The login form is stale or was not sent by this site; "
                                 "log in again.")
    try:
        done = request.app.state.auth.login(form.get("token", "").strip(),
                                             request.app.state.auth.client_of(request))
    except Throttled as exc:
        return _login_page(request, target, status=429, error=str(exc.detail))
    if done is None:
        return _login_page(request, target, status=401, error="That token is not valid.")
    sid, _ = done
    response = RedirectResponse(target, status_code=303)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    response.set_cookie(
        SESSION_COOKIE, sid, httponly=True, samesite="strict", path="/",
        secure=_settings(request).cookie_secure,
        max_age=int(_settings(request).session_hours * 3600),
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await form_data(request)
    session = _page_session(request)
    request.app.state.auth.check_csrf(session, form.get("csrf"))
    request.app.state.auth.logout(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# -- review ------------------------------------------------------------------------------------


def _display_sources(view: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in view["sources"]:
        windows = excerpts(s["text"], s["spans"])
        out.append({
            **s,
            "windows": [
                {"segments": segments(s["text"], s["spans"], a, b), "cut_before": a > 0,
                 "cut_after": b < len(s["text"])}
                for a, b in windows
            ],
            "length": len(s["text"]),
            "excerpted": windows != [(0, len(s["text"]))],
        })
    return out


def _reading(store: Store, request: Request, queue_id: str, annotator: str
             ) -> tuple[str, list[dict[str, Any]]]:
    """The viewer (a person, aliases resolved) and the queue's items in the order this viewer
    reads them, each with its ``number`` (the ``pos`` of the pages): blind, the viewer's own
    shuffled order; revealed, the reading order (:mod:`judge.review.blind`)."""
    me = person(store, annotator)
    full = {i["id"]: i for i in queue_items(store, queue_id)}
    shown = visible_items(store, queue_id, full.values(),
                          reveal=_settings(request).reveal_judge, viewer=me)
    return me, [{**full[s["id"]], "number": s["number"]} for s in shown]


def _review_context(
    store: Store, request: Request, session: Session, queue: dict[str, Any],
    items: list[dict[str, Any]], pos: int,
) -> dict[str, Any]:
    me = person(store, session.identity.annotator)
    item = items[pos - 1]
    mine = [r for r in current_reviews(store, [item["subject"]]).get(item["subject"], [])
            if r["annotator"] == me]
    view = item_view(store, item, _settings(request).reveal_judge, mine[0] if mine else None)
    todo = [i["number"] for i in items if needs_review(i, me)]
    holders = store.item_lease_holders(queue["id"])
    free = [i["number"] for i in items if i["number"] != pos and free_for(i, me, holders)]
    later = [p for p in free if p > pos] or free
    return {
        "queue": queue, "view": view, "pos": pos, "total": len(items),
        "answer_segments": segments(view["answer"]["text"], view["answer"]["spans"]),
        "sources": _display_sources(view),
        "mine_count": sum(me in i["reviewers"] for i in items),
        "complete": sum(i["state"] in ("done", "adjudicated") for i in items),
        "todo_count": len(todo),
        "next_todo": later[0] if later else None,
        "needed_here": needs_review(item, me) or bool(mine),
        "taken_by_others": needs_review(item, me) and not take(store, queue["id"], item, me),
        "labels": LABELS, "subtypes": REVIEW_SUBTYPES,
        "reveal": _settings(request).reveal_judge,
    }


def _url(path: str, **params: Any) -> str:
    return path + "?" + urlencode({k: v for k, v in params.items() if v is not None})


LIST_PAGE_SIZE = 200


def _list_rows(store: Store, queue: dict[str, Any], items: list[dict[str, Any]], me: str,
               reveal: bool) -> list[dict[str, Any]]:
    """One row per item with what the list shows and filters on; blind unless ``reveal``."""
    texts = store.queue_item_texts(queue["id"])
    runs = {r["id"]: Path(r["input_path"] or "").name or r["id"] for r in store.runs()}
    rows = []
    for item in items:
        found = texts.get(item["id"], {})
        rows.append({
            "id": item["id"], "position": item["number"], "answer_id": item["answer_id"],
            "claim_id": item["claim_id"], "kind": item["kind"], "text": found.get("text") or "",
            "state": item["state"], "mine": me in item["reviewers"],
            "reviewed": bool(item["reviewers"]),
            # blind: no reason at all (even "judge_flagged" beside a sampled pass would tell
            # which items the judge passed)
            "reasons": item["reasons"] if reveal else [],
            "category": item.get("category") if reveal else None,
            "dataset": runs.get(item["run_id"] or "", "-"),
            "label": found.get("label") if reveal else None,
            "support": found.get("support") if reveal else None,
        })
    return rows


def _no_queue(request: Request, session: Session, exc: QueueError) -> Response:
    """The page for a queue that does not exist (or no queue at all)."""
    return render(request, "message.html", status=404, session=session,
                  title="No review queue", message=str(exc))


@router.get("/review/list")
def review_list(
    request: Request, queue: str | None = None, label: str | None = None,
    reason: str | None = None, dataset: str | None = None, reviewed: str | None = None,
    q: str | None = None, page: int = 1,
) -> Response:
    """Every item of a queue in one table (an answer's claims together), with filters and
    search: a claim's text contains the words, or an answer, claim or item id is them whole."""
    session = _page_session(request)
    reveal = _settings(request).reveal_judge
    store = _store(request)
    try:
        try:
            queue_row = get_queue(store, queue)
        except QueueError as exc:
            return _no_queue(request, session, exc)
        me, items = _reading(store, request, queue_row["id"], session.identity.annotator)
        rows = _list_rows(store, queue_row, items, me, reveal)
    finally:
        store.close()
    choices = {
        "reason": sorted({r for row in rows for r in row["reasons"]}) if reveal else [],
        "dataset": sorted({row["dataset"] for row in rows}),
        "label": sorted({row["label"] for row in rows if row["label"]}) if reveal else [],
    }
    needle = (q or "").strip().casefold()
    shown = [
        row for row in rows
        if (not label or not reveal or row["label"] == label)
        and (not reason or not reveal or reason in row["reasons"])
        and (not dataset or row["dataset"] == dataset)
        and (reviewed not in ("yes", "no", "mine") or
             (reviewed == "yes" and row["reviewed"]) or (reviewed == "no" and not row["reviewed"])
             or (reviewed == "mine" and row["mine"]))
        and (not needle or needle in row["text"].casefold()
             or needle in {row["answer_id"].casefold(), (row["claim_id"] or "").casefold(),
                           row["id"].casefold()})
    ]
    pages = max(1, -(-len(shown) // LIST_PAGE_SIZE))
    page = min(max(page, 1), pages)
    window = shown[(page - 1) * LIST_PAGE_SIZE: page * LIST_PAGE_SIZE]
    by_answer: dict[str, dict[str, Any]] = {}
    for row in window:  # reading order; an answer's claims together, at its first claim
        by_answer.setdefault(row["answer_id"], {"answer_id": row["answer_id"], "rows": []})[
            "rows"].append(row)
    groups = list(by_answer.values())
    filters = {"label": label, "reason": reason, "dataset": dataset, "reviewed": reviewed,
               "q": q}
    return render(request, "list.html", session=session, queue=queue_row, groups=groups,
                  total=len(rows), matched=len(shown), page=page, pages=pages,
                  choices=choices, filters=filters, reveal=reveal, why_help=CATEGORY_HELP,
                  page_url=lambda n: _url("/review/list", queue=queue_row["id"], page=n,
                                          **{k: v for k, v in filters.items() if v}))


@router.get("/review")
def review_page(request: Request, queue: str | None = None, pos: int | None = None,
                saved: int | None = None) -> Response:
    session = _page_session(request)
    store = _store(request)
    try:
        try:
            q = get_queue(store, queue)
        except QueueError as exc:
            return _no_queue(request, session, exc)
        me, items = _reading(store, request, q["id"], session.identity.annotator)
        if not items:
            return render(request, "message.html", session=session, title="Nothing to review",
                          message=f"Queue {q['id']} holds no items.")
        if pos is None:
            done = f"Saved item {saved}. " if saved else ""
            if not any(needs_review(i, me) for i in items):
                return render(request, "message.html", session=session, title="All done",
                              message=f"{done}You have reviewed everything in queue {q['id']} "
                                      "that needs you. Thank you.", queue=q)
            given = assign_next(store, q["id"], items, me)
            if given is None:
                return render(request, "message.html", session=session,
                              title="Nothing free right now",
                              message=f"{done}Every item of queue {q['id']} that still needs "
                                      "you is being reviewed by someone else right now. Try "
                                      "again in a few minutes.", queue=q)
            return RedirectResponse(_url("/review", queue=q["id"], pos=given["number"]),
                                    status_code=303)
        if not 1 <= pos <= len(items):
            return render(request, "message.html", status=404, session=session,
                          title="No such item", message=f"Queue {q['id']} has items 1 to "
                          f"{len(items)}.", queue=q)
        ctx = _review_context(store, request, session, q, items, pos)
    finally:
        store.close()
    return render(request, "review.html", session=session, error=None, form=None, saved=saved,
                  **ctx)


@router.post("/review")
async def review_submit(request: Request) -> Response:
    form = await form_data(request)
    session = _page_session(request)
    request.app.state.auth.check_csrf(session, form.get("csrf"))
    store = _store(request)
    try:
        try:
            q = get_queue(store, form.get("queue"))
            me, items = _reading(store, request, q["id"], session.identity.annotator)
            pos = int(form.get("pos") or 0)
            if not 1 <= pos <= len(items) or items[pos - 1]["id"] != form.get("item_id"):
                raise QueueError("the item is not at that position of the queue; reload the page")
        except (QueueError, ValueError) as exc:
            raise HTTPException(422, str(exc)) from exc
        item = items[pos - 1]
        spent = form.get("time_spent_ms") or ""
        try:
            guard(store, q["id"], item, me)
            record_review(
                store, item["subject"], session.identity.annotator, form.get("label", ""),
                subtype=form.get("subtype"), note=form.get("note"),
                guideline_version=_settings(request).guideline_version,
                time_spent_ms=int(spent) if spent.isdigit() else None,
                queue_id=q["id"], item_id=item["id"], origin="web",
            )
        except (ReviewError, ItemTaken) as exc:
            ctx = _review_context(store, request, session, q, items, pos)
            return render(request, "review.html",
                          status=409 if isinstance(exc, ItemTaken) else 422, session=session,
                          error=str(exc), form=form, saved=None, **ctx)
        release(store, item, me)
        me, items = _reading(store, request, q["id"], session.identity.annotator)
        given = assign_next(store, q["id"], items, me, after=pos)
    finally:
        store.close()
    if given is None:
        return RedirectResponse(_url("/review", queue=q["id"], saved=pos), status_code=303)
    return RedirectResponse(_url("/review", queue=q["id"], saved=pos, pos=given["number"]),
                            status_code=303)


# -- dashboard ---------------------------------------------------------------------------------


@router.get("/dashboard")
def dashboard(request: Request, queue: str | None = None) -> Response:
    session = _page_session(request)
    store = _store(request)
    try:
        try:
            counts = visible_counts(dashboard_counts(store, queue),
                                    _settings(request).reveal_judge)
        except QueueError as exc:
            return _no_queue(request, session, exc)
    finally:
        store.close()
    return render(request, "dashboard.html", session=session, counts=counts, labels=LABELS)


# -- adjudication ------------------------------------------------------------------------------


def _adjudication_context(
    store: Store, request: Request, queue: str | None, item_id: str | None
) -> dict[str, Any]:
    q = get_queue(store, queue)
    items = queue_items(store, q["id"])
    waiting = [i for i in items if i["state"] == "needs_adjudication"]
    current = next((i for i in items if i["id"] == item_id), None) if item_id else None
    current = current or (waiting[0] if waiting else None)
    ctx: dict[str, Any] = {"queue": q, "waiting": waiting, "current": current, "view": None,
                           "reviews": [], "sources": [], "answer_segments": [],
                           "labels": LABELS, "subtypes": REVIEW_SUBTYPES,
                           "reveal": _settings(request).reveal_judge}
    if current is not None:
        view = item_view(store, current, _settings(request).reveal_judge)
        ctx.update(
            view=view, reviews=current_reviews(store, [current["subject"]]).get(
                current["subject"], []),
            sources=_display_sources(view),
            answer_segments=segments(view["answer"]["text"], view["answer"]["spans"]),
        )
    return ctx


@router.get("/adjudicate")
def adjudicate_page(
    request: Request, queue: str | None = None, item: str | None = None
) -> Response:
    session = _page_session(request)
    require_role(session.identity, "adjudicator")
    store = _store(request)
    try:
        try:
            ctx = _adjudication_context(store, request, queue, item)
        except QueueError as exc:
            return _no_queue(request, session, exc)
    finally:
        store.close()
    return render(request, "adjudicate.html", session=session, error=None, **ctx)


@router.post("/adjudicate")
async def adjudicate_submit(request: Request) -> Response:
    form = await form_data(request)
    session = _page_session(request)
    request.app.state.auth.check_csrf(session, form.get("csrf"))
    require_role(session.identity, "adjudicator")
    store = _store(request)
    try:
        try:
            ctx = _adjudication_context(store, request, form.get("queue"), form.get("item_id"))
        except QueueError as exc:
            raise HTTPException(422, str(exc)) from exc
        if ctx["current"] is None or ctx["current"]["id"] != form.get("item_id"):
            raise HTTPException(422, "that item does not await adjudication in this queue")
        try:
            adjudicate(
                store, ctx["current"]["subject"], session.identity.annotator,
                form.get("label", ""), form.get("subtype"), form.get("reason", ""),
                guideline_version=_settings(request).guideline_version,
                queue_id=ctx["queue"]["id"],
            )
        except ReviewError as exc:
            return render(request, "adjudicate.html", status=422, session=session,
                          error=str(exc), **ctx)
    finally:
        store.close()
    return RedirectResponse(_url("/adjudicate", queue=ctx["queue"]["id"]), status_code=303)
