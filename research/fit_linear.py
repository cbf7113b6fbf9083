"""Fit the ``scores`` strategy's linear decision rule on the *tuning* split only, from stored
calls (no model call): a thin caller of :mod:`judge.fitting` (what ``judge fit`` runs), kept
for the research reports and for reproducing the fits they name.

    python research/fit_linear.py --db out/tune/scores.db --version VERSION \
        [--gold research/tuning_subset.jsonl] [--first N] [--text-features] \
        [--output research/reports/tuning_linear.json] [--toml research/configs/x.toml]

The same fit as ``judge fit --holdout 0`` (every claim fitted on, nothing held out), with the
features chosen here (judge.config.score_model.CORE_FEATURES, plus TEXT_FEATURES with
``--text-features``) rather than taken from the version's rule, and ``--first N`` to fit on
the first N gold items only (the tuning rounds only append, so ``--first 244`` reproduces a fit
made before round 3). The report adds the in-sample figures per dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.config.score_model import CORE_FEATURES, TEXT_FEATURES  # noqa: E402
from judge.evaluation.gold import GoldFile, load_gold  # noqa: E402
from judge.fitting.items import FitItem, load_items  # noqa: E402
from judge.fitting.logistic import (  # noqa: E402
    LAMBDAS,
    QUEUE_GRID,
    balanced_accuracy,
    fit_rule,
    predict,
)
from judge.fitting.run import candidate_config  # noqa: E402
from judge.fitting.split import folds_of  # noqa: E402
from judge.fitting.toml import config_toml  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402


def shown_path(path: Path) -> str:
    """``path`` relative to the repository when inside it (reports name no machine's
    folders)."""
    try:
        return str(path.resolve().relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def first_items(gold: GoldFile, first: int | None) -> GoldFile:
    if first is None:
        return gold
    return GoldFile(path=gold.path, sha256=gold.sha256, entries=gold.entries[:first],
                    lines=min(first, gold.lines))


def per_dataset(items: list[FitItem], pred: np.ndarray) -> dict[str, Any]:
    out = {}
    for ds in sorted({i.dataset or "-" for i in items}):
        idx = [k for k, i in enumerate(items) if (i.dataset or "-") == ds]
        y = np.array([items[k].y for k in idx])
        out[ds] = {"n": len(idx), "balanced_accuracy": round(balanced_accuracy(pred[idx], y), 3),
                   "accuracy": round(float((pred[idx] == y).mean()), 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", required=True, help="judge version of the scores run")
    parser.add_argument("--gold", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--queue-recall", type=float, default=0.9)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--toml", type=Path, help="also write the judge config it fitted")
    parser.add_argument("--first", type=int, help="fit on the first N items of --gold only")
    parser.add_argument("--text-features", action="store_true",
                        help="also weigh judge.config.score_model.TEXT_FEATURES")
    args = parser.parse_args(argv)
    store = Store.open(args.db)
    data = load_items(store, first_items(load_gold(args.gold), args.first), args.version)
    items = data.items
    names = CORE_FEATURES + (TEXT_FEATURES if args.text_features else ())
    y = np.array([i.y for i in items])
    fitted = fit_rule([i.features for i in items], y, folds_of(items), names, args.queue_recall)
    pred, _ = predict([i.features for i in items], fitted.model)
    cv = fitted.cv_balanced_accuracy
    report = {
        "gold": shown_path(args.gold), "version": data.version, "n": len(items),
        "features": list(names),
        "configurations_tried": len(LAMBDAS) + len(QUEUE_GRID),
        "cross_validated_balanced_accuracy": {str(k): round(v, 3) for k, v in cv.items()},
        "cross_validated_balanced_log_loss": {
            str(k): round(v, 4) for k, v in fitted.cv_balanced_log_loss.items()},
        "l2": fitted.l2,
        "score_model": fitted.model.model_dump(),
        "review_support_below": fitted.review_support_below,
        "skipped": dict(data.skipped),
        "model_calls": data.model_calls,
        "tuning_fit": {
            "balanced_accuracy": round(balanced_accuracy(pred, y), 3),
            "cross_validated_balanced_accuracy": round(cv[fitted.l2], 3),
            "accuracy": round(float((pred == y).mean()), 3),
            "recall": {LABELS[k]: round(float((pred[y == k] == k).mean()), 3)
                       for k in range(4) if (y == k).any()},
            "queue_recall_out_of_fold": fitted.queue["queue_recall"],
            "queue_load_out_of_fold": fitted.queue["queue_load"],
            "per_dataset": per_dataset(items, pred),
        },
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    if args.toml:
        config = candidate_config(data.config, fitted, None)
        args.toml.write_text(config_toml(config, [
            f"Written by research/fit_linear.py from {data.version} on {args.gold.name} "
            f"({len(items)} items{f', the first {args.first}' if args.first else ''}; tuning",
            "split only); see the fit's report for its cross-validated figures."]), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
