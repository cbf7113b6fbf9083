"""Answer leases: concurrent runs on one store share the work instead of repeating calls.

A run takes a lease on an answer (for its judge version) when it claims it for judging
(:meth:`judge.store.admission.AdmissionMixin.admit`). An answer another live run holds is
skipped and picked up later: when that run has stored it, it is taken from the store; when its
lease expired or its process died (same host), it is claimed again. Leases are renewed while a
run works and released with the answer's result, or when the run ends.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

from judge.store.base import StoreBase

#: How long a lease lasts without renewal (a run renews its leases well before).
LEASE_SECONDS = 120.0


def new_holder() -> str:
    """A name for one run of one process (leases are held per holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class LeasesMixin(StoreBase):
    def _live(self, row: dict[str, object]) -> bool:
        """Whether a lease row still holds: not expired, and (on this host) its process
        alive."""
        if float(row["expires_at"] or 0) < time.time():  # type: ignore[arg-type]
            return False
        if row["host"] == socket.gethostname() and isinstance(row["pid"], int):
            return _pid_alive(row["pid"])
        return True

    def renew_leases(self, holder: str, ttl: float = LEASE_SECONDS) -> None:
        with self.transaction():
            self.db.execute("update answer_leases set expires_at = ? where holder = ?",
                            [time.time() + ttl, holder])

    def release_leases(self, holder: str, answer_id: str | None = None) -> None:
        with self.transaction():
            if answer_id is None:
                self.db.execute("delete from answer_leases where holder = ?", [holder])
            else:
                self.db.execute("delete from answer_leases where holder = ? and answer_id = ?",
                                [holder, answer_id])
