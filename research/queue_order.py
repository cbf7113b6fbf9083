"""Compare the review queue's reading orders (judge.review.queue.ORDERS) by what people meet when
they read only the first part of the queue; no model call.

    python research/queue_order.py --tune-db out/tune/scores.db --tune-version VERSION \
        [--check-db out/eval.db --check-version VERSION --check-gold gold/eval_all.jsonl] \
        [--output research/reports/queue_order.json]

* **Tuning** (decides): the linear rule of the default profile's features is refitted out of
  fold (judge.fitting: grouped 10-fold, the L2 strength of the default's fit) on the stored
  tuning calls, so every tuning claim gets a label and P(supported) from a rule that never saw
  it; the queue rows those verdicts would make are ordered by
  judge.review.queue.reading_positions.
* **Check** (confirms): the stored verdicts of ``--check-version`` for ``--check-gold``.

For each order (and the input order as a floor) and each budget in calibration.BUDGETS:
the share of the gold non-supported claims among the first ``ceil(budget * n)`` claims,
and the most any order could reach (``budget / share of non-supported``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from fit_linear import shown_path  # noqa: E402

from calibration import BUDGETS, CalibrationItem  # noqa: E402
from calibration.report import queue_budget  # noqa: E402
from judge.config.score_model import CORE_FEATURES, TEXT_FEATURES  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.evaluation.matching import gold_to_records  # noqa: E402
from judge.fitting.items import load_items  # noqa: E402
from judge.fitting.logistic import out_of_fold  # noqa: E402
from judge.fitting.split import folds_of  # noqa: E402
from judge.review.queue import ORDERS, reading_positions  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402

L2 = 10.0  # the strength research/fit_linear.py chose for the default (tuning_linear_v1_t244_text)
SUPPORT_BELOW = 0.5  # the default's review_support_below


def budget_figures(rows: list[dict[str, Any]], gold: dict[str, str]) -> dict[str, Any]:
    """Per order: the share of gold non-supported claims met within each budget
    (calibration.queue_budget over the order's positions); ``gold`` maps claim id to label."""
    n = len(rows)
    total = sum(label != "supported" for label in gold.values())
    positions = {order: reading_positions(rows, order) for order in ORDERS}
    # the floor: no ordering at all
    positions["input"] = {r["claim_id"]: k for k, r in enumerate(rows, start=1)}
    out: dict[str, Any] = {"n": n, "rejected": total, "best_possible": {}, "orders": {}}
    for budget in BUDGETS:
        read = math.ceil(budget * n - 1e-9)
        out["best_possible"][f"{budget:.0%}"] = round(min(1.0, read / total), 3)
    for order, placed in positions.items():
        items = [CalibrationItem(claim_id=r["claim_id"], gold_label=gold[r["claim_id"]],
                                 judge_label=r["label"], in_queue=r["claim_id"] in placed,
                                 queue_position=placed.get(r["claim_id"])) for r in rows]
        out["orders"][order] = {k: round(e.value, 3) for k, e in queue_budget(items).items()}
    return out


def tuning_rows(db: Path, version: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    items = load_items(Store.open(db), load_gold(ROOT / "tuning_subset.jsonl"), version).items
    y = np.array([i.y for i in items])
    pred, probs = out_of_fold([i.features for i in items], y, folds_of(items), L2,
                              CORE_FEATURES + TEXT_FEATURES)
    rows, gold = [], {}
    for i, (item, label) in enumerate(zip(items, pred, strict=True)):
        support = float(probs[i, 0])
        name = LABELS[label]
        reasons = [] if name == "supported" else [f"label:{name}"]
        if name == "supported" and support < SUPPORT_BELOW:
            reasons.append("doubtful_support")
        rows.append({"claim_id": item.gold_id, "answer_id": item.gold_id, "idx": 0,
                     "label": name, "subtype": None, "review_reasons": reasons,
                     "review": bool(reasons), "support": support})
        gold[item.gold_id] = item.label
    return rows, gold


def check_rows(db: Path, version: str, gold_path: Path
               ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    gold = load_gold(gold_path)
    refs = gold_to_records(gold.entries).refs
    store = Store.open(db)
    stored = {r["claim_id"]: r for r in store.verdict_rows(judge_version=version)}
    rows, labels = [], {}
    for entry in gold.entries:
        ref = refs.get(entry.item.id)
        row = stored.get(ref.claim_id) if ref else None
        if row is None or row["claim_id"] in labels:
            continue
        if row.get("support") is None:
            sys.exit(f"{row['claim_id']}: stored without support; run `judge replay` first")
        rows.append(row)
        labels[row["claim_id"]] = entry.item.label
    return rows, labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune-db", type=Path, required=True)
    parser.add_argument("--tune-version", required=True)
    parser.add_argument("--check-db", type=Path)
    parser.add_argument("--check-version")
    parser.add_argument("--check-gold", type=Path, default=ROOT.parent / "gold" / "eval_all.jsonl")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"budgets": list(BUDGETS), "orders": list(ORDERS),
                              "configurations_tried": len(ORDERS)}
    rows, labels = tuning_rows(args.tune_db, args.tune_version)
    report["tuning"] = {"version": args.tune_version, "l2": L2,
                        **budget_figures(rows, labels)}
    if args.check_db and args.check_version:
        rows, labels = check_rows(args.check_db, args.check_version, args.check_gold)
        report["check"] = {"version": args.check_version, "gold": shown_path(args.check_gold),
                           **budget_figures(rows, labels)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
