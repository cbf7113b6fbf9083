"""``judge run --batch-file IN [--batch-output OUT]``: a run's requests as a batch input file
for ``vllm run-batch`` (OpenAI's batch format), and its output file read back, so a machine
without network judges with a model served offline.

A run reads the results ``OUT`` holds for the calls it waits for (matched by custom id: the
call id), stores them as online calls are stored, and goes on; the calls ``OUT`` does not hold
(all of them without ``--batch-output``; the verifications once the splits are read) are
written to ``IN`` (replacing it) and the run stops, saying the command to run next. Reading
the same output again is harmless: calls already stored are not asked for.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from judge.models.batched import read_results, request_line
from judge.models.failures import RunStopped

if TYPE_CHECKING:
    from judge.runs.deferred import BatchQueue, Pending


class BatchFiles:
    """The file transport of :class:`~judge.runs.deferred.BatchQueue`."""

    async def run(self, queue: BatchQueue, pending: list[Pending]) -> None:
        mode = queue.mode
        assert mode.file is not None
        results = {}
        if mode.output is not None and mode.output.is_file():
            results = read_results(mode.output.read_text(encoding="utf-8"))
        answered = [p for p in pending if p.call_id in results]
        if answered:
            queue.ingest(answered, results, "no result")
        left = [p for p in pending if p.call_id not in results]
        if not left:
            return
        mode.file.parent.mkdir(parents=True, exist_ok=True)
        partial = mode.file.with_name(mode.file.name + ".partial")
        with partial.open("w", encoding="utf-8") as out:
            for p in left:
                out.write(json.dumps(request_line(p.call_id, p.body), ensure_ascii=False) + "\n")
        os.replace(partial, mode.file)  # never a half-written file under the name
        output = mode.output or mode.file.with_name(mode.file.stem + ".out.jsonl")
        model = left[0].body.get("model", "MODEL")
        queue.show([{"job": str(mode.file), "phase": queue.phase, "state": "written",
                     "requests": len(left), "completed": 0, "failed": 0}])
        raise RunStopped(
            f"wrote {len(left)} request(s) to {mode.file} (batch {queue.phase}); run them, "
            f"e.g. `vllm run-batch -i {mode.file} -o {output} --model {model}`, then run "
            f"the same command with --batch-output {output} to read them back")
