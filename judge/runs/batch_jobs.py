"""``judge run --batch-api``: a run's requests sent through the provider's files and batches
endpoints (litellm's ``acreate_file``, ``acreate_batch``, ``aretrieve_batch``,
``afile_content``), at its batch price.

Each batch job is recorded before anything is sent (:mod:`judge.store.batches`: its calls'
ids, the requests' custom ids), then its input file id, then its batch id, each as soon as the
provider gives it; a run stopped at any point (Ctrl-C, ``kill -9``, a restart) finds the jobs
holding the calls it waits for and follows them from where they were: a file uploaded but no
batch recorded is looked for among the provider's batches (by its input file) before one is
created, and a batch recorded is polled, never sent again. A job is marked read only once its
answers are committed. Requests are cut into jobs within the provider's limits (requests per
batch, bytes per file); budgets are reserved before a job is sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from judge.hashing import content_hash
from judge.models.batched import CHAT_URL, provider_of, read_results, request_line
from judge.models.failures import RunStopped
from judge.models.lazy_litellm import quiet_litellm

if TYPE_CHECKING:
    from judge.runs.deferred import BatchQueue, Pending
    from judge.store import Store

#: The provider's batch states after which no more results come.
FINAL = ("completed", "expired", "failed", "cancelled")
#: Batches looked through for one made from a file whose batch id was not recorded.
LIST_LIMIT = 100


def chunks(batch: list[Pending], max_requests: int, max_bytes: int) -> list[list[Pending]]:
    """``batch`` cut in order into jobs of at most ``max_requests`` requests and
    ``max_bytes`` bytes of input file (a request larger alone is a job of its own)."""
    out: list[list[Pending]] = []
    size = 0
    for pending in batch:
        line = len(_line(pending))
        if not out or len(out[-1]) >= max_requests or (out[-1] and size + line > max_bytes):
            out.append([])
            size = 0
        out[-1].append(pending)
        size += line
    return out


def _line(pending: Pending) -> bytes:
    return (json.dumps(request_line(pending.call_id, pending.body), ensure_ascii=False)
            + "\n").encode("utf-8")


class ProviderBatches:
    """The batch-API transport of :class:`~judge.runs.deferred.BatchQueue`."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id

    async def run(self, queue: BatchQueue, pending: list[Pending]) -> None:
        client = queue.client
        provider = provider_of(client.config.model)
        where: dict[str, Any] = {"custom_llm_provider": provider}
        if client.config.api_base:
            where["api_base"] = client.config.api_base
        by_id = {p.call_id: p for p in pending}
        open_jobs = self.store.open_batch_jobs(by_id, provider)
        covered = {c for ids in open_jobs.values() for c in ids}
        jobs = list(open_jobs)
        admitted = queue.reserve([p for p in pending if p.call_id not in covered])
        for chunk in chunks(admitted, queue.mode.max_requests, queue.mode.max_bytes):
            ids = [p.call_id for p in chunk]
            job_id = "bj-" + content_hash([self.run_id, ids, time.time()])[:16]
            self.store.add_batch_job({"id": job_id, "run_id": self.run_id,
                                      "model": client.config.model, "provider": provider,
                                      "endpoint": CHAT_URL, "phase": queue.phase,
                                      "state": "preparing", "requests": len(ids)}, ids)
            jobs.append(job_id)
        await self._follow(queue, jobs, by_id, where)

    async def _follow(self, queue: BatchQueue, jobs: list[str], by_id: dict[str, Pending],
                      where: dict[str, Any]) -> None:
        started = time.monotonic()
        left = list(jobs)
        while left:
            for job_id in list(left):
                if await self._advance(queue, job_id, by_id, where):
                    left.remove(job_id)
            queue.show([_view(self.store.batch_job(j)) for j in jobs])
            if not left:
                return
            if queue.deadline(started):
                raise RunStopped(
                    f"{len(left)} batch job(s) still in progress at the provider after "
                    f"{queue.mode.wait_s:g} s; what finished is stored, and running the same "
                    "command again picks them up (nothing is sent twice)")
            await asyncio.sleep(queue.mode.poll_s)

    async def _advance(self, queue: BatchQueue, job_id: str, by_id: dict[str, Pending],
                       where: dict[str, Any]) -> bool:
        """Take a job one step on; True once its answers are stored."""
        litellm = quiet_litellm()

        job = self.store.batch_job(job_id)
        assert job is not None
        calls = [c for c in self.store.batch_job_calls(job_id) if c in by_id]
        state = job["state"]
        if state == "preparing":
            if not calls:  # its requests are no longer asked for (another input)
                self.store.update_batch_job(job_id, state="abandoned")
                return True
            data = b"".join(_line(by_id[c]) for c in calls)
            uploaded = await litellm.acreate_file(
                file=(f"{job_id}.jsonl", data, "application/jsonl"), purpose="batch", **where)
            self.store.update_batch_job(job_id, input_file_id=uploaded.id, state="uploaded")
            job = {**job, "input_file_id": uploaded.id}
            state = "uploaded"
        if state == "uploaded":
            batch = await self._made_from(job["input_file_id"], where) or \
                await litellm.acreate_batch(
                    completion_window="24h", endpoint=CHAT_URL,
                    input_file_id=job["input_file_id"],
                    metadata={"claim_judge_job": job_id}, **where)
            self.store.update_batch_job(job_id, batch_id=batch.id, state="submitted")
            job = {**job, "batch_id": batch.id}
            state = "submitted"
        if state == "submitted":
            batch = await litellm.aretrieve_batch(batch_id=job["batch_id"], **where)
            counts = _counts(batch)
            if batch.status not in FINAL:
                self.store.update_batch_job(job_id, counts=counts)
                return False
            errors = getattr(batch, "errors", None)
            self.store.update_batch_job(
                job_id, state="completed", counts=counts, output_file_id=batch.output_file_id,
                error_file_id=batch.error_file_id,
                error=str(errors)[:2000] if errors and getattr(errors, "data", None) else None)
            job = self.store.batch_job(job_id) or job
        results = {}
        for file_id in (job["error_file_id"], job["output_file_id"]):  # an answer wins
            if file_id:
                content = await litellm.afile_content(file_id=file_id, **where)
                results.update(read_results(content.content.decode("utf-8")))
        status = json.loads(job["counts"] or "{}").get("status", "completed")
        missing = f"batch request failed: the batch ended {status} without a result for it"
        if job["error"]:
            missing += f" ({job['error'][:500]})"
        queue.ingest([by_id[c] for c in calls], results, missing)
        self.store.update_batch_job(job_id, state="read")
        return True

    async def _made_from(self, input_file_id: str, where: dict[str, Any]) -> Any:
        """The provider's batch made from this input file, if one was (its id was not
        recorded: the run stopped between creating it and recording it)."""
        litellm = quiet_litellm()

        listed = await litellm.alist_batches(limit=LIST_LIMIT, **where)
        for batch in getattr(listed, "data", None) or []:
            if getattr(batch, "input_file_id", None) == input_file_id:
                return batch
        return None


def _counts(batch: Any) -> dict[str, Any]:
    counts = getattr(batch, "request_counts", None)
    return {"status": batch.status, "total": getattr(counts, "total", None),
            "completed": getattr(counts, "completed", None),
            "failed": getattr(counts, "failed", None)}


def _view(job: dict[str, Any] | None) -> dict[str, Any]:
    """A job as the progress display shows it."""
    job = job or {}
    counts = json.loads(job.get("counts") or "{}")
    return {"job": job.get("id"), "phase": job.get("phase"), "state": job.get("state"),
            "status": counts.get("status"), "requests": job.get("requests"),
            "completed": counts.get("completed") or 0, "failed": counts.get("failed") or 0}
