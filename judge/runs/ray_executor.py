"""Scale-out on Ray: a run's answers spread over Ray workers (actors), each with its own model
client (or its own embedded model), ``concurrency`` answers at a time.

The driver (the process that runs ``judge run`` or calls :func:`judge.api.judge_file`) keeps
everything that makes a run exact: it decides which answers still need judging, and it alone
writes the store: each worker sends back the answer's outcome with the model calls it made,
and the driver stores them exactly as a local run does (:class:`judge.store.buffer.WriteBuffer`).
Workers on the driver's machine read the store file (read-only) to reuse calls an interrupted
run already made; workers elsewhere make those again. Rate limits (``rpm`` / ``tpm``) are
split evenly over the workers, so together they keep the configured limit.

``ray_address``: ``None`` starts a local Ray instance (or uses the one ``ray.init`` already
started in this process, or the cluster Ray's own settings name); ``"auto"`` or
``"ray://head:10001"`` joins a cluster. Every node needs claim-judge installed at the same
version (a worker whose prompt templates give another judge version is refused).
"""

from __future__ import annotations

import copy
import os
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.config import JudgeConfig
from judge.models.client import CallStats, ModelClient, RunStopped
from judge.models.providers import THREADS_ENV, provider_for
from judge.pipeline import JudgedAnswer, Pipeline
from judge.records import AnswerRecord
from judge.store.calls import CallReader

if TYPE_CHECKING:
    from judge.store.buffer import WriteBuffer


class WorkerCalls:
    """A worker's calls: served from what it made itself, else from the store file when the
    worker can read it; the ones made since the last answer returned go back to the driver."""

    def __init__(self, reader: CallReader) -> None:
        self.reader = reader
        self.made: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.pending: list[str] = []

    def get_call(self, call_id: str) -> dict[str, Any] | None:
        if call_id in self.made:
            from judge.store import dumps

            return {k: (dumps(v) if isinstance(v, dict | list) else v)
                    for k, v in self.made[call_id][0].items()}
        return self.reader.get_call(call_id)

    def save_call(self, row: dict[str, Any], attempts: Any = ()) -> None:
        self.made[row["id"]] = (dict(row), list(attempts))
        self.pending.append(row["id"])

    def drain(self) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        out = [self.made[i] for i in dict.fromkeys(self.pending)]
        self.pending = []
        return out


def _stats_delta(now: CallStats, before: CallStats) -> CallStats:
    delta = CallStats()
    for f in fields(CallStats):
        value = getattr(now, f.name)
        if isinstance(value, set):
            setattr(delta, f.name, set(value) - getattr(before, f.name))
        else:
            setattr(delta, f.name, value - getattr(before, f.name))
    return delta


def _add(total: CallStats, delta: CallStats) -> None:
    for f in fields(CallStats):
        value = getattr(delta, f.name)
        if isinstance(value, set):
            getattr(total, f.name).update(value)
        else:
            setattr(total, f.name, getattr(total, f.name) + value)


class JudgeWorker:
    """One Ray actor: a pipeline with its own model client."""

    def __init__(self, config_json: str, store_path: str | None) -> None:
        config = JudgeConfig.model_validate_json(config_json)
        self.calls = WorkerCalls(CallReader(store_path))
        self.pipeline = Pipeline(config, ModelClient(config, self.calls))
        self._reported = CallStats()

    def judge_version(self) -> str:
        return self.pipeline.judge_version

    async def judge(self, record: AnswerRecord, run_id: str,
                    domain: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            out["answer"] = await self.pipeline.judge(record, run_id, domain)
        except RunStopped as exc:
            out["stopped"] = str(exc)
        now = self.pipeline.client.stats
        out["stats"] = _stats_delta(now, self._reported)
        self._reported = copy.deepcopy(now)
        out["calls"] = self.calls.drain()
        return out


class RayExecutor:
    """Answers spread over ``workers`` Ray actors (default: the cluster's CPUs)."""

    def __init__(self, config: JudgeConfig, judge_version: str, store_path: Path | None,
                 address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError(
                "the Ray executor needs Ray: pip install 'claim-judge[ray]'") from exc
        self._started = not ray.is_initialized()
        if self._started:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        share = config.share(count)
        # workers import the judge package this process runs (a checkout comes first); Ray
        # expands ${...} from each worker's own environment
        code = str(Path(__file__).resolve().parents[2])
        env = {"PYTHONPATH": code + os.pathsep + "${PYTHONPATH}"}
        provider = provider_for(config.model)  # an in-process model computes on the worker
        if provider is not None and provider.computes_here and THREADS_ENV not in os.environ:
            env[THREADS_ENV] = str(max(1, (os.cpu_count() or 1) // count))
        actor = ray.remote(num_cpus=1)(JudgeWorker).options(
            runtime_env={"env_vars": env}, max_concurrency=max(1, config.concurrency))
        self.actors: list[Any] = [actor.remote(share.model_dump_json(),
                                    str(store_path) if store_path else None)
                       for _ in range(count)]
        versions = set(ray.get([a.judge_version.remote() for a in self.actors]))
        if versions != {judge_version}:
            self.close()
            raise RuntimeError(
                f"Ray workers judge as {sorted(versions)}, this process as {judge_version}: "
                "install the same claim-judge (and prompts) on every node")
        self.capacity = count * config.concurrency
        self.load = [0] * count
        self._stats = CallStats()

    async def judge(
        self, record: AnswerRecord, run_id: str, buffer: WriteBuffer, domain: str | None = None
    ) -> JudgedAnswer:
        index = min(range(len(self.actors)), key=self.load.__getitem__)
        self.load[index] += 1
        try:
            out = await self.actors[index].judge.remote(record, run_id, domain)
        finally:
            self.load[index] -= 1
        for row, attempts in out["calls"]:
            buffer.save_call(row, attempts)
        _add(self._stats, out["stats"])
        if "stopped" in out:
            raise RunStopped(out["stopped"])
        answer: JudgedAnswer = out["answer"]
        return answer

    def stats(self) -> CallStats:
        return self._stats

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if self._started:  # started here: stopped here
            ray.shutdown()
            self._started = False
