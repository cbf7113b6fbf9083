"""Authentication: bearer tokens for the API, a login form (itself CSRF-protected by a double
submitted token) that sets an HttpOnly session cookie for the review pages, and a per-session
CSRF token for their forms.

Wrong tokens are throttled (:class:`FailureThrottle`, :meth:`Authenticator.admit`), counted
per source (the client's address): after :data:`MAX_FAILURES` wrong tokens within
:data:`FAILURE_WINDOW_S` seconds, a source gets the same 429 (status, body, ``Retry-After``)
for every attempt, whatever the token (none is checked, so the answer tells nothing about
it), and every such attempt counts as a failure too, so a source that keeps guessing stays
throttled. The source is the TCP peer; ``X-Forwarded-For`` is read only when the peer is one of
the proxies the operator lists (``--trusted-proxy``, ``$CLAIM_JUDGE_TRUSTED_PROXIES``), so
the clients behind a listed proxy are throttled each on its own."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from judge.service.sessions import Session, StoredSessions
from judge.service.settings import Identity

SESSION_COOKIE = "judge_session"
#: The login form's CSRF token (double submit: the same value in this cookie and the form).
LOGIN_CSRF_COOKIE = "judge_login_csrf"


class LoginRequired(Exception):
    """Raised by page routes; answered with a redirect to the login form."""

    def __init__(self, next_url: str = "/review") -> None:
        self.next_url = next_url


#: Wrong tokens a client may send within :data:`FAILURE_WINDOW_S` before it is refused (429).
MAX_FAILURES = 10
FAILURE_WINDOW_S = 60.0
#: Clients remembered at most (the oldest are forgotten first).
MAX_CLIENTS = 10_000
TRUSTED_PROXIES_ENV = "CLAIM_JUDGE_TRUSTED_PROXIES"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Throttled(HTTPException):
    """Too many wrong tokens from this client: 429 with the seconds to wait."""

    def __init__(self, wait: float) -> None:
        seconds = max(1, int(wait + 0.999))
        super().__init__(429, f"too many wrong tokens from this client; try again in {seconds} s",
                         headers={"Retry-After": str(seconds)})


class FailureThrottle:
    """Failed attempts per source in a sliding window, in this process (the last ``limit``
    of each source are kept: all the window needs)."""

    def __init__(self, limit: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window_s, self._clock = limit, window_s, clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, stamp: float) -> deque[float]:
        seen = self._failures.get(client)
        if seen is None:
            return deque()
        while seen and seen[0] <= stamp - self.window_s:
            seen.popleft()
        if not seen:
            del self._failures[client]
        return seen

    def wait(self, client: str) -> float:
        """Seconds ``client`` must wait before a token is checked again (0: go ahead)."""
        with self._lock:
            return self._wait(client, self._clock())

    def _wait(self, client: str, stamp: float) -> float:
        seen = self._recent(client, stamp)
        return seen[0] + self.window_s - stamp if len(seen) >= self.limit else 0.0

    def failed(self, client: str) -> None:
        with self._lock:
            self._failed(client, self._clock())

    def _failed(self, client: str, stamp: float) -> None:
        seen = self._recent(client, stamp)
        if not seen:
            if len(self._failures) >= MAX_CLIENTS:
                del self._failures[next(iter(self._failures))]
            seen = self._failures[client] = deque(maxlen=self.limit)
        seen.append(stamp)

    def check(self, client: str) -> None:
        """Raise :class:`Throttled` while ``client`` must wait; the attempt counts as a
        failure then (a source that keeps trying stays throttled)."""
        with self._lock:
            stamp = self._clock()
            if self._wait(client, stamp) <= 0:
                return
            self._failed(client, stamp)
            wait = self._wait(client, stamp)
        raise Throttled(wait)


def parse_proxies(spec: str | list[str] | None) -> tuple[Network, ...]:
    """Addresses or networks (``10.0.0.5``, ``10.0.0.0/8``, ``::1``), comma- or
    space-separated; ``ValueError`` naming an entry that is neither."""
    entries = spec if isinstance(spec, list) else (spec or "").replace(",", " ").split()
    out = []
    for entry in (e.strip() for e in entries if e.strip()):
        try:
            out.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"trusted proxy {entry!r} is not an IP address or network "
                             "(e.g. 10.0.0.5 or 10.0.0.0/8)") from None
    return tuple(out)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def source_of(peer: str, forwarded_for: str | None, trusted: tuple[Network, ...]) -> str:
    """Where a request comes from: the TCP ``peer``, unless it is a trusted proxy; then the
    nearest address of ``X-Forwarded-For`` (read from the right) that is not a trusted proxy
    itself. A forwarded entry that is not an address ends the walk at the last trusted hop."""
    def is_trusted(text: str) -> bool:
        address = _address(text)
        return address is not None and any(address in net for net in trusted)

    if not trusted or not forwarded_for or not is_trusted(peer):
        return peer
    source = peer
    for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
        if _address(hop) is None:
            return source
        source = str(_address(hop))
        if not is_trusted(hop):
            return source
    return source


class Authenticator:
    def __init__(self, tokens: dict[str, Identity], session_hours: float,
                 sessions: StoredSessions,
                 throttle: FailureThrottle | None = None,
                 trusted_proxies: tuple[Network, ...] = ()) -> None:
        self._tokens = dict(tokens)
        self._sessions = sessions
        self._ttl = session_hours * 3600
        self.throttle = throttle or FailureThrottle()
        self.trusted_proxies = trusted_proxies

    def client_of(self, request: Request) -> str:
        """The source a request comes from (:func:`source_of`)."""
        peer = request.client.host if request.client else "unknown"
        return source_of(peer, request.headers.get("x-forwarded-for"), self.trusted_proxies)

    def admit(self, token: str, client: str) -> Identity | None:
        """The token's identity, None for a wrong token (counted against ``client``);
        :class:`Throttled`, the same for every token and counted too, while ``client`` has
        failed too often: no token is checked then."""
        self.throttle.check(client)
        identity = self.identity_for_token(token)
        if identity is None:
            self.throttle.failed(client)
        return identity

    def identity_for_token(self, token: str) -> Identity | None:
        found = None
        for known, identity in self._tokens.items():  # constant time per candidate
            if hmac.compare_digest(known.encode(), token.encode()):
                found = identity
        return found

    # -- sessions -------------------------------------------------------------------------

    def login(self, token: str, client: str = "unknown") -> tuple[str, Session] | None:
        """A new session for a valid token; None for a wrong one (counted against
        ``client``); :class:`Throttled` while the client must wait (:meth:`admit`)."""
        identity = self.admit(token, client)
        if identity is None:
            return None
        sid = secrets.token_urlsafe(32)
        session = Session(identity, secrets.token_urlsafe(24), time.time() + self._ttl)
        self._sessions.put(sid, session)
        return sid, session

    def logout(self, sid: str | None) -> None:
        if sid:
            self._sessions.drop(sid)

    def session(self, sid: str | None) -> Session | None:
        """The live session of a cookie (kept in the store: it outlives a restart)."""
        return self._sessions.get(sid) if sid else None

    # -- request helpers --------------------------------------------------------------------

    def api_identity(self, request: Request) -> Identity:
        """The bearer token's identity; 401 without a valid one."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HTTPException(
                401, "authentication required: send 'Authorization: Bearer <token>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        identity = self.admit(token.strip(), self.client_of(request))
        if identity is None:
            raise HTTPException(401, "invalid token", headers={"WWW-Authenticate": "Bearer"})
        return identity

    def page_session(self, request: Request) -> Session:
        session = self.session(request.cookies.get(SESSION_COOKIE))
        if session is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise LoginRequired(target)
        return session

    @staticmethod
    def check_csrf(session: Session, submitted: str | None) -> None:
        if not submitted or not hmac.compare_digest(session.csrf.encode(), submitted.encode()):
            raise HTTPException(403, "the form is stale or was not sent by this site; reload it")


def require_role(identity: Identity, role: str) -> None:
    if not identity.can(role):
        raise HTTPException(
            403, f"{identity.name} has the role {identity.role}; this needs {role} or above"
        )


#: The schema extension naming the least role a route needs (:func:`needs`).
ROLE_KEY = "x-role"


def needs(role: str) -> dict[str, Any]:
    """The ``openapi_extra`` of a route only ``role`` or above may use: :class:`RoleFirst`
    checks the caller's token and role before the framework reads the body or the
    parameters, so a caller who may not use the route gets 401 or 403 whatever the request
    holds (never 422 first); the schema shows the role."""
    return {ROLE_KEY: role}


class RoleFirst(APIRoute):
    """A route whose role (:func:`needs`) is checked before anything else of the request;
    the identity found is kept for the route's own dependencies (``request.state.identity``:
    the token is checked, and a wrong one counted, once)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        role = (self.openapi_extra or {}).get(ROLE_KEY)
        if role is None:
            return handler

        async def guarded(request: Request) -> Response:
            identity = request.app.state.auth.api_identity(request)
            require_role(identity, role)
            request.state.identity = identity
            return await handler(request)

        return guarded
