"""Two judges' reports on the same gold, compared item by item: the difference in balanced
accuracy (B minus A) with a paired bootstrap interval, resampling whole source documents
(an OCNLI premise, a dialogue) so that items sharing a source stay together.

    python research/paired_reports.py A.json B.json --gold GOLD.jsonl [--draws 2000]

``A.json`` and ``B.json`` are ``judge eval-gold --output-json`` reports of the same gold file
(each lists its ``misjudged`` items; every other matched item was judged right). 0 model calls.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge.fitting.logistic import balanced_accuracy  # noqa: E402
from research.readers_transfer import group_bootstrap  # noqa: E402


def _right(report: dict[str, Any], ids: list[str]) -> np.ndarray:
    """Whether each item was judged right: it is not among the report's misjudged."""
    wrong = {str(m["gold_id"]) for m in report["misjudged"]}
    return np.array([i not in wrong for i in ids])


def compare(a: dict[str, Any], b: dict[str, Any], gold: Sequence[dict[str, Any]],
            draws: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Balanced accuracy of A and B on ``gold`` and B minus A with a 95% interval."""
    ids = [str(g["id"]) for g in gold]
    names = sorted({str(g["label"]) for g in gold})
    labels = np.array([names.index(str(g["label"])) for g in gold])
    sources = [str(g["sources"][0]["id"]) if g.get("sources") else str(g["id"]) for g in gold]
    # each judge's prediction as far as balanced accuracy needs it: the gold label where it
    # was right, no label (-1) where it was not
    pred_a = np.where(_right(a, ids), labels, -1)
    pred_b = np.where(_right(b, ids), labels, -1)

    def difference(rows: np.ndarray) -> float:
        return (balanced_accuracy(pred_b[rows], labels[rows])
                - balanced_accuracy(pred_a[rows], labels[rows]))

    low, high = group_bootstrap(difference, sources, draws=draws, seed=seed)
    ba_a, ba_b = balanced_accuracy(pred_a, labels), balanced_accuracy(pred_b, labels)
    return {"a": a.get("judge_version"), "b": b.get("judge_version"), "n": len(ids),
            "sources": len(set(sources)), "balanced_accuracy_a": round(ba_a, 4),
            "balanced_accuracy_b": round(ba_b, 4),
            "difference": [round(ba_b - ba_a, 4), round(low, 4), round(high, 4)]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="report of judge A (judge eval-gold --output-json)")
    parser.add_argument("b", type=Path, help="report of judge B, on the same gold")
    parser.add_argument("--gold", type=Path, required=True, help="the gold JSONL both read")
    parser.add_argument("--draws", type=int, default=2000)
    args = parser.parse_args(argv)
    gold = [json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in (args.a, args.b)]
    for path, report in zip((args.a, args.b), reports, strict=True):
        if report.get("n") != len(gold):
            print(f"error: {path} judged {report.get('n')} items, the gold holds {len(gold)}",
                  file=sys.stderr)
            return 1
    out = compare(*reports, gold, draws=args.draws)
    d = out["difference"]
    print(f"{out['n']} items, {out['sources']} sources: A {out['balanced_accuracy_a']:.1%}, "
          f"B {out['balanced_accuracy_b']:.1%}; B - A {d[0] * 100:+.1f} points "
          f"({d[1] * 100:+.1f} to {d[2] * 100:+.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
