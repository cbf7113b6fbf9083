"""Authentication: bearer tokens for the API, a login form (itself CSRF-protected by a double
submitted token) that sets an HttpOnly session cookie for the review pages, and a per-session
CSRF token for their forms."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from fastapi import HTTPException, Request

from judge.service.settings import Identity

SESSION_COOKIE = "judge_session"
#: The login form's CSRF token (double submit: the same value in this cookie and the form).
LOGIN_CSRF_COOKIE = "judge_login_csrf"


@dataclass
class Session:
    identity: Identity
    csrf: str
    expires: float


class LoginRequired(Exception):
    """Raised by page routes; answered with a redirect to the login form."""

    def __init__(self, next_url: str = "/review") -> None:
        self.next_url = next_url


class Authenticator:
    def __init__(self, tokens: dict[str, Identity], session_hours: float) -> None:
        self._tokens = dict(tokens)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._ttl = session_hours * 3600

    def identity_for_token(self, token: str) -> Identity | None:
        found = None
        for known, identity in self._tokens.items():  # constant time per candidate
            if hmac.compare_digest(known.encode(), token.encode()):
                found = identity
        return found

    # -- sessions -------------------------------------------------------------------------

    def login(self, token: str) -> tuple[str, Session] | None:
        identity = self.identity_for_token(token)
        if identity is None:
            return None
        sid = secrets.token_urlsafe(32)
        session = Session(identity, secrets.token_urlsafe(24), time.time() + self._ttl)
        with self._lock:
            self._expire()
            self._sessions[sid] = session
        return sid, session

    def logout(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._sessions.pop(sid, None)

    def session(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is None or session.expires < time.time():
                self._sessions.pop(sid, None)
                return None
            return session

    def _expire(self) -> None:
        stamp = time.time()
        for sid in [s for s, v in self._sessions.items() if v.expires < stamp]:
            del self._sessions[sid]

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
        identity = self.identity_for_token(token.strip())
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
