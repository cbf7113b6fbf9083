"""Does evaluating the split on top of its cached instructions change what it outputs
(issue 36)? Each answer is split by the product's splitter with ``reuse_instructions`` off (every
request evaluated from an empty cache, as before) and on (on top of the cached instructions,
judge.models.shared_prefix), in forward and reverse order; the claims, skips and errors are
compared, with the seconds each.

    python research/prefix_reuse.py [--answers 20] [--output research/reports/prefix_reuse.json]

Inputs: the first answers of Factcheck-GPT's dev file (distinct answers, long: the hardest
case for a reused prefix, since they generate the most tokens) and ``make run``'s sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.config import JudgeConfig  # noqa: E402
from judge.models import embedded  # noqa: E402
from judge.models.client import ModelClient  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.split.claims import Splitter  # noqa: E402

GOLD = ROOT.parent.parent / "shared" / "gold" / "external" / "factcheck_gpt.dev.jsonl"
SAMPLE = ROOT.parent / "gold" / "samples" / "answers.jsonl"


def records(answers: int) -> list[AnswerRecord]:
    out = [AnswerRecord.model_validate(json.loads(line))
           for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    seen: set[str] = set()
    for line in GOLD.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["answer"] in seen or len(seen) >= answers:
            continue
        seen.add(item["answer"])
        out.append(AnswerRecord.model_validate({
            "id": item["id"].rsplit(":", 1)[0], "question": item["question"],
            "answer": item["answer"], "sources": item["sources"]}))
    return out


async def split(config: JudgeConfig, record: AnswerRecord) -> tuple[float, Any]:
    """The product's split of ``record`` (no store: always a model call), its seconds and
    its claims and skips."""
    client = ModelClient(config, None)
    started = time.perf_counter()
    out = await Splitter(config, client, prompts_dir()).split(record, None)
    return time.perf_counter() - started, [[c.text for c in out.claims], out.skipped, out.error]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "prefix_reuse.json")
    args = parser.parse_args(argv)
    base = JudgeConfig.load().model_copy(update={"split_atomic": False})
    warm = base.model_copy(update={"reuse_instructions": True})
    cold_config = base.model_copy(update={"reuse_instructions": False})
    embedded.load()
    items = records(args.answers)
    runs: dict[str, list[tuple[str, float, Any]]] = {}
    orders = {"cold": (cold_config, items), "instructions": (warm, items),
              "instructions, reversed": (warm, items[::-1])}
    for name, (config, order) in orders.items():
        got = []
        for record in order:
            seconds, out = asyncio.run(split(config, record))
            got.append((record.answer_id, seconds, out))
            print(name, record.answer_id, f"{seconds:.1f}s", flush=True)
        runs[name] = sorted(got, key=lambda row: row[0])
    cold = {a: out for a, _, out in runs["cold"]}
    report: dict[str, Any] = {"answers": len(items), "runs": {}}
    for name, got in runs.items():
        report["runs"][name] = {
            "seconds_mean": round(sum(s for _, s, _ in got) / len(got), 2),
            "same_claims_as_cold": sum(out == cold[a] for a, _, out in got),
            "differs": [a for a, _, out in got if out != cold[a]]}
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
