"""Batches submitted over HTTP: a run is started at once (so its id can be returned) and
:func:`judge.api.judge_file` finishes it in a worker thread with its own store connection,
from the request body held in memory (nothing is written to disk but the store). The run is
resumable like any CLI run: submitting the same body again resumes it."""

from __future__ import annotations

import hashlib
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.store import Store
from judge.version import register

log = logging.getLogger("judge.service")


class BatchJobs:
    def __init__(self, db_path: Path, config: JudgeConfig) -> None:
        self.db_path = db_path
        self.config = config
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-batch")
        self._futures: dict[str, Future[None]] = {}
        self._errors: dict[str, str] = {}
        self._lock = threading.Lock()

    def submit(self, body: bytes) -> dict[str, Any]:
        digest = hashlib.sha256(body).hexdigest()
        store = Store.open(self.db_path)
        try:
            version = register(store, self.config).id
            run_id, resumed = store.start_run(version, "stream", digest, purpose="api")
        finally:
            store.close()
        with self._lock:
            active = self._futures.get(run_id)
            if active is None or active.done():
                self._futures[run_id] = self._pool.submit(self._run, run_id, body)
        return {"run_id": run_id, "judge_version": version, "resumed": resumed}

    def _run(self, run_id: str, body: bytes) -> None:
        from judge.api import judge_file_as
        from judge.models.client import RunStopped

        store = Store.open(self.db_path)
        try:
            # judge_file resumes the 'running' run of the same input and judge version: this one
            judge_file_as("api", body, config=self.config, db=store)
        except RunStopped as exc:  # the run is recorded as stopped; submitting again resumes
            log.warning("batch %s stopped: %s", run_id, exc)
            self._errors[run_id] = f"stopped: {exc}; submit the same body again to resume"
        except Exception as exc:  # recorded on the run; never raised into the server
            log.error("batch %s failed: %s: %s", run_id, type(exc).__name__, exc)
            self._errors[run_id] = f"{type(exc).__name__}: {exc}"
            try:
                store.finish_run(run_id, {"error": self._errors[run_id]}, status="failed")
            except Exception:
                log.exception("could not mark run %s failed", run_id)
        finally:
            store.close()

    def active(self, run_id: str) -> bool:
        future = self._futures.get(run_id)
        return future is not None and not future.done()

    def error(self, run_id: str) -> str | None:
        return self._errors.get(run_id)

    def wait(self, run_id: str, timeout: float | None = None) -> None:
        future = self._futures.get(run_id)
        if future is not None:
            future.result(timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
