"""Splitting only the sentences that are not atomic (issue 36): ``split_claims`` v3 against v2
on the answers where the two differ, with the embedded model.

    python research/sentence_split.py [--output research/reports/sentence_split.json]

Under v2 an answer with any sentence that is not atomic (:mod:`judge.split.atomic`) is split
whole; under v3 only the run from its first sentence that is not atomic to its last is given
to the model (the atomic ones before it as context), and the atomic sentences before and
after that run are claims as they stand. The inputs are every answer of the dev
files where the two differ (some sentences atomic, some not: Factcheck-GPT, BEGIN, DialFact,
WiCE) and ``make run``'s sample; each is split by the product's splitter with both versions,
one after the other (so the host's speed drifts alike for both). Reported per dataset: the
seconds of the split, the claims, the sentences judged as they stand because the split left
or rewrote them (``uncovered``, ``judge_error``), how often both give the same claims, and,
against Factcheck-GPT's human claim splits, how much of each human claim the split's claims
hold (:func:`judge.split.checkable.grounding` of the human claim in its best claim). Nothing
is fitted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.config import JudgeConfig  # noqa: E402
from judge.models import embedded  # noqa: E402
from judge.models.client import ModelClient  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.split.atomic import atomic_reason  # noqa: E402
from judge.split.checkable import GROUNDED_SHARE, grounding  # noqa: E402
from judge.split.claims import Split, Splitter, own_citations  # noqa: E402

EXTERNAL = ROOT.parent.parent / "shared" / "gold" / "external"
DATASETS = ("factcheck_gpt", "begin", "dialfact", "wice")
SAMPLE = ROOT.parent / "gold" / "samples" / "answers.jsonl"
_HUMAN_ID = re.compile(r"r(\d+)s(\d+)c(\d+)")


def mixed(record: AnswerRecord, rule: str) -> bool:
    """Some of the answer's sentences are atomic and some are not: v2 and v3 differ."""
    texts, kept = Splitter.sentences(record)
    if not kept:
        return False
    atomic = {atomic_reason(t, own_citations(s), rule) is None
              for t, s in zip(texts, kept, strict=True)}
    return atomic == {True, False}


def inputs(rule: str) -> list[tuple[str, AnswerRecord, list[str]]]:
    """(dataset, record, human claims) of every answer where v2 and v3 differ."""
    out: list[tuple[str, AnswerRecord, list[str]]] = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = AnswerRecord.model_validate(json.loads(line))
        if record.claims is None and mixed(record, rule):
            out.append(("sample", record, []))
    for name in DATASETS:
        answers: dict[str, tuple[AnswerRecord, list[str]]] = {}
        for line in (EXTERNAL / f"{name}.dev.jsonl").read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item["answer"] not in answers:
                try:
                    record = AnswerRecord.model_validate({
                        "id": f"{name}:{len(answers)}", "question": item.get("question"),
                        "answer": item["answer"], "sources": item["sources"]})
                except ValueError:
                    continue  # bad input (an over-long source id): rejected by the product too
                answers[item["answer"]] = (record, [])
            if name == "factcheck_gpt" and _HUMAN_ID.search(item["id"]):
                answers[item["answer"]][1].append(item["claim"])
        out += [(name, record, human) for record, human in answers.values()
                if mixed(record, rule)]
    return out


async def split(config: JudgeConfig, record: AnswerRecord) -> tuple[float, Split]:
    client = ModelClient(config, None)
    started = time.perf_counter()
    out = await Splitter(config, client, prompts_dir()).split(record, None)
    return time.perf_counter() - started, out


def summary(split: Split) -> dict[str, Any]:
    return {"claims": [c.text for c in split.claims],
            "origins": [c.origin for c in split.claims],
            "skipped": [s["sentence"] for s in split.skipped],
            "errors": len(split.ungrounded) + (split.error is not None)}


def held(human: list[str], claims: list[str], answer: str) -> list[float]:
    """For each human claim, the share of its content words in the split's best claim."""
    return [max((grounding(h, c, answer) for c in claims), default=0.0) for h in human]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "sentence_split.json")
    parser.add_argument("--limit", type=int, default=0, help="at most this many answers")
    args = parser.parse_args(argv)
    v2 = JudgeConfig.load()
    rule = v2.atomic_rule or "atomic/v2"
    v3 = v2.model_copy(update={"prompts": {**v2.prompts, "split_claims": "v3"},
                               "split_atomic": rule})
    items = inputs(rule)[: args.limit or None]
    embedded.load()
    rows = []
    for dataset, record, human in items:
        got = {}
        for name, config in (("v2", v2), ("v3", v3)):
            seconds, out = asyncio.run(split(config, record))
            got[name] = {"seconds": round(seconds, 2), **summary(out)}
            if human:
                got[name]["held"] = [round(x, 3) for x in held(
                    human, [c.text for c in out.claims], record.answer)]
        rows.append({"dataset": dataset, "answer_id": record.answer_id, **got})
        print(dataset, record.answer_id, got["v2"]["seconds"], got["v3"]["seconds"],
              got["v2"]["claims"] == got["v3"]["claims"], flush=True)
    report = {"answers": len(rows), "per_dataset": per_dataset(rows), "rows": rows}
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    print(json.dumps(report["per_dataset"], indent=1))
    return 0


def per_dataset(rows: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["dataset"]].append(row)
        groups["all"].append(row)
    out: dict[str, Any] = {}
    for name, group in groups.items():
        figures: dict[str, Any] = {"answers": len(group),
                                   "same_claims": sum(r["v2"]["claims"] == r["v3"]["claims"]
                                                      for r in group)}
        for version in ("v2", "v3"):
            runs = [r[version] for r in group]
            held_all = [x for r in runs for x in r.get("held", [])]
            figures[version] = {
                "split_seconds": round(sum(r["seconds"] for r in runs), 1),
                "claims": sum(len(r["claims"]) for r in runs),
                "as_it_stands": sum(o in ("uncovered", "sentence") for r in runs
                                    for o in r["origins"]),
                "uncovered": sum(o == "uncovered" for r in runs for o in r["origins"]),
                "judge_errors": sum(r["errors"] for r in runs),
            }
            if held_all:
                figures[version]["human_claims"] = len(held_all)
                figures[version]["human_held_mean"] = round(sum(held_all) / len(held_all), 3)
                figures[version]["human_held_at_least_grounded"] = sum(
                    x >= GROUNDED_SHARE for x in held_all)
        out[name] = figures
    return out


if __name__ == "__main__":
    raise SystemExit(main())
