"""Login sessions of the review pages, kept in the store (``web_sessions``) so that a restart
of ``judge serve`` keeps reviewers logged in until their session expires.

The store holds a SHA-256 digest of the session cookie, never the cookie itself, so reading
the file does not let anyone log in. A stored session is honoured only while its identity
(name and role) is still one of the service's tokens: removing a token or changing its role
ends that person's sessions at the next request."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from judge.service.settings import Identity
from judge.store import opened


@dataclass
class Session:
    identity: Identity
    csrf: str
    expires: float


def session_key(sid: str) -> str:
    """What the store keeps of a session cookie."""
    return hashlib.sha256(sid.encode()).hexdigest()


class StoredSessions:
    """Sessions in the store at ``db_path``, for the identities the service knows now."""

    def __init__(self, db_path: Path, identities: Iterable[Identity]) -> None:
        self.db_path = db_path
        self.identities = set(identities)

    def put(self, sid: str, session: Session) -> None:
        with opened(self.db_path) as store:
            store.put_web_session(session_key(sid), session.identity.name,
                                  session.identity.role, session.csrf, session.expires)

    def get(self, sid: str) -> Session | None:
        """The live session of a cookie, or None (unknown, expired, or its identity is no
        longer one of the tokens)."""
        with opened(self.db_path) as store:
            row = store.web_session(session_key(sid))
            if row is None:
                return None
            identity = Identity(row["name"], row["role"])
            if identity not in self.identities:
                store.drop_web_session(session_key(sid))
                return None
            return Session(identity, row["csrf"], float(row["expires_at"]))

    def drop(self, sid: str) -> None:
        with opened(self.db_path) as store:
            store.drop_web_session(session_key(sid))
