"""Provider batch jobs (``judge run --batch-api``): what was sent, under which ids, and where
each job stands, so a run stopped while a batch is in progress picks it up again (it polls,
never sends a request twice). The jobs' requests are calls, by id (each request's custom id)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from judge.store.base import StoreBase, dumps, now

#: job states whose results are still to come or to be read (a job in one of them is polled,
#: its requests never sent again)
OPEN_STATES = ("preparing", "uploaded", "submitted", "completed")


class BatchesMixin(StoreBase):
    def add_batch_job(self, job: dict[str, Any], call_ids: Iterable[str]) -> None:
        """A job before anything is sent (state ``preparing``), with its calls' ids."""
        row = {**job, "created_at": now(), "updated_at": now()}
        with self.transaction():
            self.db.table("batch_jobs").insert(row)
            self.db.table("batch_requests").insert_all(
                ({"call_id": c, "job_id": job["id"]} for c in call_ids), ignore=True)

    def update_batch_job(self, job_id: str, **values: Any) -> None:
        values = {k: (dumps(v) if isinstance(v, dict | list) else v) for k, v in values.items()}
        with self.transaction():
            self.db.table("batch_jobs").update(job_id, {**values, "updated_at": now()})

    def open_batch_jobs(self, call_ids: Iterable[str], provider: str) -> dict[str, list[str]]:
        """The open jobs (:data:`OPEN_STATES`) of ``provider`` holding any of these calls:
        job id -> the ids among them it holds."""
        marks = ",".join("?" * len(OPEN_STATES))
        jobs = {r["id"] for r in self.rows(
            f"select id from batch_jobs where provider = ? and state in ({marks})",
            [provider, *OPEN_STATES])}
        out: dict[str, list[str]] = {}
        if not jobs:
            return out
        for row in self.rows_in("select call_id, job_id from batch_requests "
                                "where call_id in ({marks})", sorted(set(call_ids))):
            if row["job_id"] in jobs:
                out.setdefault(row["job_id"], []).append(row["call_id"])
        return out

    def batch_job(self, job_id: str) -> dict[str, Any] | None:
        return self.one("select * from batch_jobs where id = ?", [job_id])

    def batch_job_calls(self, job_id: str) -> list[str]:
        return [r["call_id"] for r in self.rows(
            "select call_id from batch_requests where job_id = ? order by call_id", [job_id])]

    def batch_jobs(self, run_id: str | None = None) -> list[dict[str, Any]]:
        if run_id is None:
            return self.rows("select * from batch_jobs order by created_at, id")
        return self.rows("select * from batch_jobs where run_id = ? order by created_at, id",
                         [run_id])
