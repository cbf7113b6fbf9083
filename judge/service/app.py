"""The FastAPI application: ``create_app(db_path, tokens, ...)``.

Security defaults: every ``/v1`` route needs a bearer token, the pages need a login; request
bodies are size-limited; errors are JSON (API) without stack traces; every response carries a
Content-Security-Policy that allows scripts and styles from ``/static`` only.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import judge
from judge.config import JudgeConfig, load_config
from judge.review.reviews import DEFAULT_GUIDELINE_VERSION
from judge.service import api, apidocs, pages
from judge.service.auth import (
    TRUSTED_PROXIES_ENV,
    Authenticator,
    LoginRequired,
    parse_proxies,
)
from judge.service.jobs import BatchJobs
from judge.service.sessions import StoredSessions
from judge.service.settings import Identity, ServiceSettings, load_tokens, parse_tokens
from judge.store import Store

log = logging.getLogger("judge.service")
STATIC = Path(__file__).parent / "static"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


class BodyTooLarge(StarletteHTTPException):
    """Raised from ``receive``: FastAPI passes HTTP exceptions raised while reading a body
    through to the handlers (anything else would become a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")


class LimitsAndHeaders:
    """ASGI middleware: refuse bodies over the limit (413) and add security headers.
    ``POST /v1/runs`` (a batch) has its own, larger limit, enforced by the route."""

    def __init__(self, app: ASGIApp, max_body: int, max_batch: int) -> None:
        self.app, self.max_body, self.max_batch = app, max_body, max_batch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_batch if scope["path"] == "/v1/runs" else self.max_body
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _json(send, 413, {"detail": f"request body exceeds {limit} bytes"})
            return
        started = False
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                    if k.encode() not in have
                ]
            await send(message)

        try:
            await self.app(scope, limited, with_headers)
        except BodyTooLarge:
            if not started:
                await _json(send, 413, {"detail": f"request body exceeds {limit} bytes"})


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = JSONResponse(body).body
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode())]
        + [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()],
    })
    await send({"type": "http.response.body", "body": payload})


#: FastAPI's detail for a JSON body its parser raised on (not a JSON syntax error)
UNPARSED_BODY = "There was an error parsing the body"


def unparsed_reason(cause: BaseException | None) -> str:
    """Why a request body that is JSON could not be read, with the fix: an integer too long
    for Python to convert, or nesting deeper than the parser goes."""
    if isinstance(cause, RecursionError):
        why = "it nests arrays or objects deeper than the service reads; flatten it"
    elif isinstance(cause, ValueError) and "digits" in str(cause):
        why = ("it holds an integer of more than 4,300 digits; send such a value as a "
               "string")
    else:
        why = f"{type(cause).__name__ if cause else 'unknown error'}: {str(cause)[:200]}"
    return f"the request body cannot be parsed: {why}"


def _loc(loc: Any) -> str:
    return ".".join(str(p) for p in loc)


def _install_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": _loc(e.get("loc", ())),
             "msg": str(e.get("msg", "")).removeprefix("Value error, ")}
            for e in exc.errors()
        ]
        message = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors) or "invalid request"
        return JSONResponse({"detail": message, "errors": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == UNPARSED_BODY:
            return JSONResponse({"detail": unparsed_reason(exc.__cause__)}, status_code=422)
        wants_html = "text/html" in request.headers.get("accept", "")
        if wants_html and not request.url.path.startswith("/v1"):
            return pages.render(request, "message.html", status=exc.status_code,
                                title=f"Error {exc.status_code}", message=str(exc.detail))
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired) -> Response:
        from urllib.parse import quote

        return RedirectResponse(f"/login?next={quote(exc.next_url, safe='')}", status_code=303)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:12]
        log.exception("error %s on %s %s", error_id, request.method, request.url.path)
        return JSONResponse(
            {"detail": "internal server error; the server log has the details",
             "error_id": error_id},
            status_code=500,
        )


def create_app(
    db_path: Path | str,
    tokens: dict[str, Identity] | str | None = None,
    judge_config: JudgeConfig | None = None,
    reveal_judge: bool = False,
    guideline_version: str = DEFAULT_GUIDELINE_VERSION,
    max_body_bytes: int = 8 * 1024 * 1024,
    max_batch_bytes: int = 128 * 1024 * 1024,
    cookie_secure: bool = False,
    trusted_proxies: str | list[str] | None = None,
) -> FastAPI:
    """The service. ``tokens``: ``{token: Identity}``, a ``"token:name[:role],..."`` string,
    or None for ``$CLAIM_JUDGE_TOKENS``. Without any token nothing can be read or written.
    ``trusted_proxies``: the addresses or networks whose ``X-Forwarded-For`` names the client
    (None: ``$CLAIM_JUDGE_TRUSTED_PROXIES``; none trusted by default)."""
    if tokens is None:
        tokens = load_tokens()
    elif isinstance(tokens, str):
        tokens = parse_tokens(tokens)
    settings = ServiceSettings(
        db_path=Path(db_path), tokens=tokens, judge_config=judge_config or load_config(),
        reveal_judge=reveal_judge, guideline_version=guideline_version,
        max_body_bytes=max_body_bytes, max_batch_bytes=max_batch_bytes,
        cookie_secure=cookie_secure,
    )
    Store.open(settings.db_path).close()  # create the file and apply migrations up front
    jobs = BatchJobs(settings.db_path, settings.judge_config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        jobs.shutdown()

    app = FastAPI(
        title="claim-judge",
        version=judge.__version__,
        description="Judge answers claim by claim; review queue and blind human review.",
        lifespan=lifespan,
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN; CSP forbids it
    )
    app.state.settings = settings
    proxies = parse_proxies(os.environ.get(TRUSTED_PROXIES_ENV) if trusted_proxies is None
                            else trusted_proxies)
    app.state.auth = Authenticator(
        tokens, settings.session_hours, StoredSessions(settings.db_path, tokens.values()),
        trusted_proxies=proxies)
    app.state.jobs = jobs
    _install_handlers(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(apidocs.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/v1/health", tags=["meta"], summary="Liveness (no token needed)")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(LimitsAndHeaders, max_body=max_body_bytes, max_batch=max_batch_bytes)
    return app

