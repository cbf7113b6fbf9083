"""Batches submitted over HTTP: the JSONL body is saved, a run is started (so its id can be
returned at once) and :func:`judge.runner.run_batch` finishes it in a worker thread with its
own store connection. The run is resumable like any CLI run."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.runner import build_pipeline, run_batch
from judge.store import Store

log = logging.getLogger("judge.service")


class BatchJobs:
    def __init__(self, db_path: Path, config: JudgeConfig, upload_dir: Path) -> None:
        self.db_path = db_path
        self.config = config
        self.upload_dir = upload_dir
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-batch")
        self._futures: dict[str, Future[None]] = {}
        self._errors: dict[str, str] = {}
        self._lock = threading.Lock()

    def submit(self, body: bytes) -> dict[str, Any]:
        digest = hashlib.sha256(body).hexdigest()
        self.upload_dir.mkdir(parents=True, exist_ok=True)
        path = self.upload_dir / f"{digest}.jsonl"
        if not path.exists():
            tmp = path.with_suffix(".part")
            tmp.write_bytes(body)
            tmp.replace(path)
        store = Store.open(self.db_path)
        try:
            version = build_pipeline(self.config, store).judge_version
            run_id, resumed = store.start_run(version, str(path), digest, purpose="api")
        finally:
            store.close()
        with self._lock:
            active = self._futures.get(run_id)
            if active is None or active.done():
                self._futures[run_id] = self._pool.submit(self._run, run_id, path)
        return {"run_id": run_id, "judge_version": version, "resumed": resumed}

    def _run(self, run_id: str, path: Path) -> None:
        store = Store.open(self.db_path)
        try:
            # run_batch resumes the 'running' run of the same input and judge version: this one.
            asyncio.run(run_batch(path, store, self.config, purpose="api"))
        except Exception as exc:  # recorded on the run; never raised into the server
            log.exception("batch %s failed", run_id)
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
