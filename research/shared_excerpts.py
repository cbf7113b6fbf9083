"""Does the embedded default judge the claims of a multi-claim answer as well when they share
their excerpts (``excerpts = "answer"``, served from the runtime's KV cache) as when each claim
has its own (``excerpts = "claim"``)? The gold answers hold one claim each, so this builds
multi-claim answers from them: the check items of ``gold/eval_xl.jsonl`` of one dataset, in a
seeded order, five at a time, become one answer with given claims whose sources are the
union of theirs (ids prefixed per item). A claim's gold label holds in the union: its own
source is still there, and the others are about other topics (a claim that another item's
source happens to support would count against both layouts alike).

    python research/shared_excerpts.py [--claims 150] [--group 5] [--work DIR]
        [--output research/reports/shared_excerpts.json]

Both layouts judge the same answers with the embedded default (one store each, in ``--work``,
so an interrupted run resumes); the report gives each layout's balanced accuracy (bootstrap
interval), accuracy, contradicted and not_in_source recall, seconds per claim, and every claim
whose label differs between the two, with its gold label.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from calibration.stats import balanced_accuracy, wilson_interval  # noqa: E402
from judge.api import judge_answers  # noqa: E402
from judge.config import load_config  # noqa: E402
from judge.store import Store  # noqa: E402

GOLD = ROOT.parent / "gold" / "eval_xl.jsonl"
SEED = "shared-excerpts-1"


def build(gold: Path, claims: int, group: int) -> tuple[list[dict[str, Any]], list[str]]:
    """(answer records with given claims, the gold label of each claim in order)."""
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    by_dataset: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: hashlib.sha256(f"{SEED}:{r['id']}".encode())
                      .hexdigest()):
        by_dataset[row["dataset"]].append(row)
    groups: list[list[dict[str, Any]]] = []
    for dataset in sorted(by_dataset):
        items = by_dataset[dataset]
        groups += [items[i:i + group] for i in range(0, len(items) - group + 1, group)]
    # interleave the datasets so that any prefix of the groups mixes them
    groups.sort(key=lambda g: hashlib.sha256(f"{SEED}:{g[0]['id']}".encode()).hexdigest())
    records, labels = [], []
    for k, items in enumerate(groups):
        if len(labels) + len(items) > claims:
            break
        records.append({
            "id": f"multi-{k:03d}-{items[0]['dataset']}",
            "question": None,
            "answer": "\n\n".join(item["claim"] for item in items),
            "sources": [{**source, "id": f"i{n}:{source['id']}"[:200]}
                        for n, item in enumerate(items) for source in item["sources"]],
            "claims": [{"text": item["claim"]} for item in items],
        })
        labels += [item["label"] for item in items]
    return records, labels


def judge(records: list[dict[str, Any]], excerpts: str, work: Path) -> dict[str, Any]:
    store = Store.open(work / f"{excerpts}.db")
    started = time.perf_counter()
    results = judge_answers(records, config=load_config(None, excerpts=excerpts), db=store,
                            progress=lambda done, total: print(
                                f"\r{excerpts}: {done}/{total} answers", end="", flush=True))
    wall = time.perf_counter() - started
    print()
    store.close()
    return {"labels": [v.label for r in results for v in r.verdicts],
            "support": [v.support for r in results for v in r.verdicts],
            "wall_s": round(wall, 1)}


def figures(gold: list[str], judged: list[str]) -> dict[str, Any]:
    def recall(label: str) -> dict[str, Any]:
        pairs = [(g, j) for g, j in zip(gold, judged, strict=True) if g == label]
        return wilson_interval(sum(g == j for g, j in pairs), len(pairs)).model_dump()

    return {
        "balanced_accuracy": balanced_accuracy(gold, judged).model_dump(),
        "accuracy": wilson_interval(sum(g == j for g, j in zip(gold, judged, strict=True)),
                                    len(gold)).model_dump(),
        "recall": {label: recall(label) for label in sorted(set(gold))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=150)
    parser.add_argument("--group", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/claim-judge-shared-excerpts"))
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "shared_excerpts.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    records, gold = build(GOLD, args.claims, args.group)
    print(f"{len(records)} answers, {len(gold)} claims")
    runs = {layout: judge(records, layout, args.work) for layout in ("claim", "answer")}
    claims = [(r["id"], c["text"]) for r in records for c in r["claims"]]
    flips = [
        {"answer": aid, "claim": text, "gold": g, "claim_layout": a, "answer_layout": b,
         "support_claim_layout": sa, "support_answer_layout": sb}
        for (aid, text), g, a, b, sa, sb in zip(
            claims, gold, runs["claim"]["labels"], runs["answer"]["labels"],
            runs["claim"]["support"], runs["answer"]["support"], strict=True)
        if a != b
    ]
    report = {
        "command": "python research/shared_excerpts.py " + " ".join(sys.argv[1:]),
        "answers": len(records), "claims": len(gold), "group": args.group,
        "layouts": {
            layout: {**figures(gold, run["labels"]), "wall_s": run["wall_s"],
                     "s_per_claim": round(run["wall_s"] / len(gold), 2)}
            for layout, run in runs.items()
        },
        "flips": flips,
        "flips_right": {layout: sum(f[f"{layout}_layout"] == f["gold"] for f in flips)
                        for layout in ("claim", "answer")},
    }
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    for layout, block in report["layouts"].items():
        ba = block["balanced_accuracy"]
        print(f"excerpts = {layout!r}: balanced accuracy {ba['value']:.3f} "
              f"[{ba['ci_low']:.3f}, {ba['ci_high']:.3f}], {block['s_per_claim']} s per claim")
    print(f"{len(flips)} labels differ; right among them: {report['flips_right']}")
    print(f"report: {args.output}")


if __name__ == "__main__":
    main()
