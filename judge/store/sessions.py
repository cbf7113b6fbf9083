"""The review pages' login sessions and the leases on queue items (who is reviewing what
now): the rows of ``web_sessions`` and ``item_leases``. Expired rows are removed as they are
met; the rules live in :mod:`judge.service.sessions` and :mod:`judge.review.assignment`."""

from __future__ import annotations

import time
from typing import Any

from judge.store.base import StoreBase, now


class SessionsMixin(StoreBase):
    # -- web sessions ----------------------------------------------------------------------

    def put_web_session(self, key: str, name: str, role: str, csrf: str,
                        expires_at: float) -> None:
        """Store a session under ``key`` (a digest of its cookie), dropping expired ones."""
        with self.transaction():
            self.db.execute("delete from web_sessions where expires_at < ?", [time.time()])
            self.db.table("web_sessions").insert(
                {"id": key, "name": name, "role": role, "csrf": csrf, "created_at": now(),
                 "expires_at": expires_at}, replace=True)

    def web_session(self, key: str) -> dict[str, Any] | None:
        """The live session stored under ``key``, or None (an expired one is removed)."""
        row = self.one("select * from web_sessions where id = ?", [key])
        if row is not None and float(row["expires_at"]) < time.time():
            self.drop_web_session(key)
            return None
        return row

    def drop_web_session(self, key: str) -> None:
        with self.transaction():
            self.db.execute("delete from web_sessions where id = ?", [key])

    # -- item leases ---------------------------------------------------------------------------

    def item_lease_holders(self, queue_id: str) -> dict[str, set[str]]:
        """Item id -> the people holding a live lease on it, in one queue."""
        held: dict[str, set[str]] = {}
        for row in self.db.query(
                "select item_id, person from item_leases where queue_id = ? and expires_at >= ?",
                [queue_id, time.time()]):
            held.setdefault(row["item_id"], set()).add(row["person"])
        return held

    def take_item_lease(self, queue_id: str, item_id: str, person: str, slots: int,
                        ttl: float) -> bool:
        """Give ``person`` (or renew) a lease on an item for ``ttl`` seconds, unless others
        already hold ``slots`` live leases on it; in one write transaction, so two people
        asking at once cannot both take the last slot."""
        stamp = time.time()
        with self.transaction():
            self.db.execute("delete from item_leases where item_id = ? and expires_at < ?",
                            [item_id, stamp])
            others = self.count(
                "select count(*) from item_leases where item_id = ? and person != ?",
                [item_id, person])
            mine = self.count("select count(*) from item_leases where item_id = ? and person = ?",
                              [item_id, person])
            if not mine and others >= slots:
                return False
            self.db.table("item_leases").insert(
                {"item_id": item_id, "person": person, "queue_id": queue_id, "taken_at": now(),
                 "expires_at": stamp + ttl}, replace=True)
            return True

    def release_item_lease(self, item_id: str, person: str) -> None:
        with self.transaction():
            self.db.execute("delete from item_leases where item_id = ? and person = ?",
                            [item_id, person])
