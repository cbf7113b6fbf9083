"""Write the operating points packaged with a probe head (``judge/config/operating/``): the
review queue's thresholds for a few target recalls and confidences, set by
:func:`calibration.operating_point.set_operating_point` on human gold the head was **not**
fitted on, from the stored verdicts of a judge version that uses the head (no model call).

    python -m research.operating_default --db out/dev_all.db \
        --version qwen2.5-coder-1.5b-instruct-q4_k_m@2f54a94d6f11 --gold gold/eval_all.jsonl \
        --description "the 785 old check claims of gold/eval_all.jsonl (held out from the head)" \
        --output judge/config/operating/qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v3.json

The gold must be held out from the head's fit (or be out-of-fold scores): the guarantee of
the bound holds for scores the head gives claims it has not seen. Per dataset, the recall,
false alarms and load of the chosen threshold are recorded beside it (``per_dataset``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from calibration.operating_point import (  # noqa: E402
    STANDARD_CONFIDENCES,
    STANDARD_TARGETS,
    set_operating_point,
)
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.evaluation.operating import gold_scores  # noqa: E402
from judge.store import Store  # noqa: E402


def point_entries(scores: Sequence[float], problems: Sequence[bool], domains: Sequence[str]
                  ) -> tuple[str | None, list[dict[str, Any]]]:
    """The packaged points (the standard grid of targets and confidences) set on these flag scores,
    each with the recall, false alarms and load of its threshold per dataset; the method."""
    method = None
    entries: list[dict[str, Any]] = []
    datasets = sorted({d for d in domains if d})
    for target in STANDARD_TARGETS:
        for confidence in STANDARD_CONFIDENCES:
            p = set_operating_point(list(scores), list(problems), target_recall=target,
                                    confidence=confidence)
            method = p.method
            if not p.sufficient:  # too little gold for this target: no point is packaged
                print(f"skipped: {p.statement()}", file=sys.stderr)
                continue
            per: dict[str, Any] = {}
            for name in datasets:
                keep = [i for i, d in enumerate(domains) if d == name]
                flagged = [scores[i] < p.threshold for i in keep]
                prob = [bool(problems[i]) for i in keep]
                n_prob = sum(prob)
                n_sup = len(prob) - n_prob
                per[name] = {
                    "n": len(keep), "problems": n_prob,
                    "recall": round(sum(f for f, q in zip(flagged, prob, strict=True) if q)
                                    / n_prob, 4) if n_prob else None,
                    "false_alarm": round(sum(f for f, q in zip(flagged, prob, strict=True)
                                             if not q) / n_sup, 4) if n_sup else None,
                    "load": round(sum(flagged) / len(keep), 4),
                }
            entries.append({
                "target_recall": target, "confidence": confidence, "threshold": p.threshold,
                "sufficient": p.sufficient, "n": p.n, "n_problems": p.n_problems,
                "gold_misses": p.gold_misses, "miss_bound": p.miss_bound,
                "gold_recall": p.gold_recall.model_dump(mode="json"),
                "false_alarm": p.false_alarm.model_dump(mode="json"),
                "load": p.load.model_dump(mode="json"),
                "statement": p.statement(), "per_dataset": per,
            })
    return method, entries


def print_points(data: dict[str, Any]) -> None:
    for p in data["points"]:
        print(f"{p['target_recall']:.2f} @ {p['confidence']:.0%}: {p['statement']}")
        for name, f in p["per_dataset"].items():
            print(f"    {name}: n {f['n']}, recall {f['recall']}, false alarms "
                  f"{f['false_alarm']}, load {f['load']}")


def points(store: Store, gold_path: Path, version: str, description: str) -> dict[str, Any]:
    gold = load_gold(gold_path)
    data = gold_scores(store, gold, version)
    head = store.judge_versions()
    config = json.loads(next(r for r in head if r["id"] == data.judge_version)["config"])
    out: dict[str, Any] = {
        "head": config["probe_head"]["file"], "head_sha256": config["probe_head"]["sha256"],
        "judge_version": data.judge_version,
        "gold": {"description": description, "file": str(gold_path),
                 "sha256": data.gold["sha256"], "matched": data.gold["matched"],
                 "unscored": data.unscored},
        "method": None, "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv), "points": [],
    }
    out["method"], out["points"] = point_entries(data.scores, data.problems, data.domains)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--gold", type=Path, required=True)
    ap.add_argument("--description", required=True)
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    store = Store.open(args.db)
    try:
        data = points(store, args.gold, args.version, args.description)
    finally:
        store.close()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    print_points(data)


if __name__ == "__main__":
    main()
