"""Benchmarks (``make bench``): print figures, assert nothing.

1. Harness overhead per claim and per answer with a zero-latency scripted model, on the
   20 peer answers of ``../shared/bench/peer_inputs.jsonl`` (the same inputs RAGAS and
   DeepEval were measured on), with model calls and tokens per answer counted with
   tiktoken ``cl100k_base`` including chat overhead and the JSON schema sent.
2. ``judge fit`` on 100 reviewed claims (70 fitted, 30 held out; the issue's target: under a
   minute on 2 cores) and with the learning curve, from a store the scripted model judged.
3. Claims per second with the embedded model on this machine (a short Chinese/English
   batch), unless ``--no-embedded``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from judge.api import judge_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.config import JudgeConfig  # noqa: E402
from judge.store import Store  # noqa: E402
from tests.fakes import FakeLLM, install  # noqa: E402

PEER = ROOT.parent / "shared" / "bench" / "peer_inputs.jsonl"


def peer_records(path: Path) -> list[dict]:
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        seen: dict[str, None] = dict.fromkeys(row["contexts"])
        sources = [{"id": f"C{i + 1}", "text": text} for i, text in enumerate(seen)]
        records.append(
            {
                "id": row["id"],
                "question": row["question"],
                "answer": row["answer"],
                "sources": sources,
                "generator": "openai/gpt-3.5-turbo",
            }
        )
    return records


def count_tokens(calls: list[dict]) -> tuple[int, int]:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    prompt = completion = 0
    for call in calls:
        # 3 tokens per message of chat framing + 3 for the reply priming (OpenAI's counting)
        prompt += 3 + sum(4 + len(enc.encode(m["content"])) for m in call["messages"])
        fmt = call["params"].get("response_format")
        if fmt:
            prompt += len(enc.encode(json.dumps(fmt)))
        completion += len(enc.encode(call.get("reply", "")))
    return prompt, completion


def bench_overhead(records: list[dict], label: str) -> None:
    fake = install(FakeLLM())
    replies: list[str] = []
    original = fake.responder

    def recording(schema: str, messages: list[dict]) -> str:
        out = original(schema, messages)
        replies.append(out)
        return out

    fake.responder = recording
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
        store = Store.open(Path(tmp) / "bench.db")
        config = JudgeConfig(model="fake/bench", concurrency=1)
        started = time.perf_counter()
        summary = judge_file(path, config=config, db=store).summary
        wall = time.perf_counter() - started
        for call, reply in zip(fake.calls, replies, strict=True):
            call["reply"] = reply
        prompt, completion = count_tokens(fake.calls)
        n = max(summary.answers, 1)
        print(
            f"[{label}] {summary.answers} answers, {summary.claims} claims, "
            f"{summary.model_calls} model calls ({summary.model_calls / n:.1f}/answer)"
        )
        print(
            f"[{label}] tokens per answer (cl100k_base): prompt {prompt / n:.0f}, "
            f"completion {completion / n:.0f}"
        )
        print(
            f"[{label}] harness overhead with a zero-latency model: "
            f"{wall / n * 1000:.1f} ms/answer, {wall / max(summary.claims, 1) * 1000:.1f} ms/claim"
        )
        started = time.perf_counter()
        again = judge_file(path, config=config, db=store).summary
        print(
            f"[{label}] re-run from store: {again.model_calls} model calls, "
            f"{(time.perf_counter() - started) * 1000:.0f} ms total"
        )
        store.close()


def bench_fit() -> None:
    from judge.api import eval_gold, fit
    from tests.fit.synthetic import (
        gold_items,
        install_letters,
        letters_for,
        scores_config,
        write_gold,
    )

    items = gold_items(100)
    install_letters(install(FakeLLM()), letters_for(items))
    with tempfile.TemporaryDirectory() as tmp:
        gold = write_gold(Path(tmp) / "gold.jsonl", items)
        db = Path(tmp) / "fit.db"
        eval_gold(gold, config=scores_config(), db=db)
        for curve in (False, True):
            started = time.perf_counter()
            result = fit(gold, db=db, curve=curve)
            wall = time.perf_counter() - started
            print(f"[fit] judge fit on {result.fitted.n + result.holdout['n']} reviewed claims"  # type: ignore[index]
                  f"{' with the learning curve' if curve else ''}: {wall:.1f} s, "
                  f"{result.model_calls} model calls")


def bench_embedded() -> None:
    records = [
        json.loads(line)
        for line in (ROOT / "gold" / "samples" / "answers.jsonl").read_text().splitlines()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
        store = Store.open(Path(tmp) / "bench.db")
        started = time.perf_counter()
        summary = judge_file(path, config=JudgeConfig.load(), db=store).summary
        wall = time.perf_counter() - started
        print(
            f"[embedded] {summary.claims} claims in {wall:.1f} s (incl. model load): "
            f"{summary.claims / wall:.2f} claims/s, {summary.model_calls} calls, "
            f"{wall / max(summary.model_calls, 1):.1f} s/call"
        )
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-embedded", action="store_true")
    args = parser.parse_args()
    if PEER.exists():
        bench_overhead(peer_records(PEER), "peer inputs")
    else:
        print(f"skipping peer comparison: {PEER} not found")
    bench_fit()
    if not args.no_embedded:
        bench_embedded()


if __name__ == "__main__":
    main()
