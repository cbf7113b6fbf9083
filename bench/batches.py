"""The ``batches`` section of ``make bench``: the three ways to send a run's calls, on the 20
peer answers (free text) against the mock, with the model ``judge init`` pins: online, the
batch API (``--batch-api``: the mock's files and batches endpoints) and a batch file
(``--batch-file``, its requests answered one by one by the mock as ``vllm run-batch`` would).
Calls, tokens and the price litellm records per answer (the batch price is the model's batch
price; a file run costs what the GPU serving it costs), online chat calls and batch requests
as the mock counted them. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from peermock import Mock

from judge.api import RunStopped, judge_file
from judge.config import JudgeConfig
from judge.runs.deferred import BatchMode
from judge.store import Store

#: what `judge init` pins
HOSTED = "openai/gpt-4.1-mini"


def _judge(mock: Mock, path: Path, db: Path, label: str,
           mode: BatchMode | None) -> tuple[Any, float]:
    config = JudgeConfig(model=HOSTED, api_base=mock.base_url, concurrency=8)
    mock.label(label, 0.0)
    store = Store.open(db)
    started = time.perf_counter()
    try:
        summary = judge_file(path, config=config, db=store, batch=mode).summary
    except RunStopped as stopped:
        summary = stopped.summary
    finally:
        store.close()
    return summary, time.perf_counter() - started


def _run_batch_file(mock: Mock, requests: Path, output: Path) -> None:
    """What ``vllm run-batch -i requests -o output`` does, against the mock."""
    out = []
    for line in requests.read_text(encoding="utf-8").splitlines():
        request = json.loads(line)
        sent = urllib.request.Request(
            mock.base_url + "/chat/completions", data=json.dumps(request["body"]).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(sent, timeout=60) as answer:
            body = json.loads(answer.read())
        out.append({"id": f"vllm-{len(out)}", "custom_id": request["custom_id"],
                    "response": {"status_code": 200, "body": body}, "error": None})
    output.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")


def bench_batches(mock: Mock, path: Path, tmp: Path, figures: dict[str, Any]) -> None:
    print(f"\n== the three ways, {HOSTED} on the peer answers (free text) ==")
    print(f"{'way':>10}{'calls/ans':>10}{'prompt/ans':>11}{'compl/ans':>10}{'online':>8}"
          f"{'batched':>8}{'USD/1k ans':>11}{'runs':>5}")
    out: dict[str, Any] = {}
    requests, output = tmp / "batch-in.jsonl", tmp / "batch-out.jsonl"
    ways: list[tuple[str, BatchMode | None]] = [
        ("online", None), ("batch API", BatchMode(api=True, poll_s=0.05)),
        ("file", BatchMode(file=requests))]
    for name, mode in ways:
        label, runs = f"ways-{name}", 0
        cost = 0.0
        while True:
            runs += 1
            summary, _ = _judge(mock, path, tmp / f"ways-{name}.db", label, mode)
            cost += summary.cost
            if not summary.stopped or mode is None or mode.file is None or runs > 3:
                break
            mock.label(label, 0.0)
            _run_batch_file(mock, requests, output)
            mode = BatchMode(file=requests, output=output)
        stats = mock.stats(label)
        n = summary.answers or 1
        batched = stats.get("batch_requests", 0.0)
        online = stats.get("calls", 0.0) - batched
        if name == "file":  # the file's requests were answered one by one, as vllm would
            batched, online = online, 0.0
        out[name] = {"calls": stats.get("calls", 0.0), "prompt": stats.get("prompt_tokens", 0),
                     "completion": stats.get("completion_tokens", 0), "online": online,
                     "batched": batched, "cost": cost, "answers": n, "runs": runs,
                     "judge_errors": summary.judge_errors}
        price = "GPU" if name == "file" else f"{cost / n * 1000:.3f}"
        print(f"{name:>10}{stats.get('calls', 0) / n:>10.2f}"
              f"{stats.get('prompt_tokens', 0) / n:>11.0f}"
              f"{stats.get('completion_tokens', 0) / n:>10.0f}{online:>8.0f}{batched:>8.0f}"
              f"{price:>11}{runs:>5}")
    figures["batches"] = out
