"""Which program-computed features, stacked with the support logit, lower the false alarms at
the stated recall (issue 32), out of fold on the dev gold. Tuning folds only: no held-back
file is read here.

    python research/stack_features.py [--db out/dev_all.db] [--l2 300] \
        [--output research/reports/stack_features.json]

Each claim's support is P(supported) from a head fitted without its fold (10 folds grouped by
source, as ``research/stack_triage.py``); the claims the queue always takes keep ``-inf``.
For each feature set a logistic of "supported" on the support logit and the set's features is
fitted out of fold on the same folds (Newton's method, the same small ridge as
:mod:`judge.fitting.stack`). The threshold is set by the exact binomial bound at 0.9 recall
with 90% and 95% confidence on the out-of-fold scores; each set is compared with the support
score and with ``stacked-v1`` (support logit + evidence strength) by a paired bootstrap of
whole groups, the threshold re-set on every resample.

Features, all computed by the program from the claim and the answer record (no model):

* ``strength``: the stored evidence strength (:mod:`judge.checks.strength`);
* ``source_coverage``: the share of the claim's distinct tokens found anywhere in the
  record's sources (the probe reads only 500 located characters of them);
* ``passage_score``: the best two-sentence passage's idf-weighted coverage of the claim, over
  every source (:func:`judge.text.best_passages`);
* ``claim_tokens``: log(1 + the claim's distinct tokens).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.fitting.stack import RIDGE  # noqa: E402
from judge.review.score import logit  # noqa: E402
from judge.split.citations import strip_markers  # noqa: E402
from judge.text import best_passages, tokens  # noqa: E402
from research.stack_triage import json_default, measure, paired, table  # noqa: E402
from research.triage import (  # noqa: E402
    DEFAULT_VERSION,
    auc,
    cv_fit,
    flag_scores,
    load,
    snapshot,
)

SETS: dict[str, tuple[str, ...]] = {
    "stacked-v1 (strength)": ("strength",),
    "source_coverage": ("source_coverage",),
    "strength + source_coverage": ("strength", "source_coverage"),
    "strength + passage_score": ("strength", "passage_score"),
    "strength + source_coverage + passage_score": ("strength", "source_coverage",
                                                    "passage_score"),
    "strength + source_coverage + claim_tokens": ("strength", "source_coverage",
                                                  "claim_tokens"),
}


def program_features(item: Any) -> dict[str, float]:
    """The candidate features of one fit item (module docstring)."""
    record = item.record
    claim = strip_markers(item.claim.text, record.sources)
    wanted = set(tokens(claim))
    seen: set[str] = set()
    best = 0.0
    for source in record.sources:
        seen |= set(tokens(source.content))
        for _, _, score in best_passages(claim, source.content, k=1, window=2):
            best = max(best, score)
    strength = item.row.get("strength")
    return {
        "strength": math.nan if strength is None else float(strength),
        "source_coverage": len(wanted & seen) / len(wanted) if wanted else 0.0,
        "passage_score": best,
        "claim_tokens": math.log1p(len(wanted)),
    }


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Weights of a logistic of ``y`` on ``[1, x]`` (Newton, ridge on the slopes)."""
    z = np.column_stack([np.ones(len(x)), x])
    w = np.zeros(z.shape[1])
    pen = np.diag([0.0] + [ridge] * x.shape[1]) * len(y)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -35, 35)))
        grad = z.T @ (p - y) + pen @ w
        hess = (z * (p * (1 - p))[:, None]).T @ z + pen + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w


def stacked_scores(base: np.ndarray, feats: np.ndarray, supported: np.ndarray,
                   folds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold stacked scores (``-inf`` where the base is ``-inf`` or a feature is
    missing: fail closed) and the weights fitted on every usable claim."""
    lg = np.array([logit(float(s)) if np.isfinite(s) else math.nan for s in base])
    x = np.column_stack([lg, feats])
    use = np.isfinite(x).all(axis=1)
    out = np.full(len(base), -math.inf)
    for k in sorted(set(folds[use].tolist())):
        train, test = use & (folds != k), use & (folds == k)
        w = fit_logistic(x[train], supported[train].astype(float))
        out[test] = 1.0 / (1.0 + np.exp(-(w[0] + x[test] @ w[1:])))
    return out, fit_logistic(x[use], supported[use].astype(float))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "dev_all.db")
    parser.add_argument("--gold", type=Path, nargs="+",
                        default=[ROOT.parent / "gold" / "eval_all.jsonl",
                                 ROOT / "tuning_subset.jsonl"])
    parser.add_argument("--tuning", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--l2", type=float, default=300.0)
    parser.add_argument("--bootstrap", type=int, default=300)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if any("fresh_check" in str(g) for g in args.gold):
        parser.error("fresh_check is never read here")
    data = load(snapshot(args.db, None), args.gold, args.version, args.tuning)
    fit = cv_fit(data.x, data.y, data.fold, lambdas=[args.l2])
    idx = np.arange(len(data.items))
    base = flag_scores(data, idx, fit.pred, fit.probs[:, 0])
    p = data.problems
    folds = np.asarray(data.fold)
    groups = [i.group for i in data.items]
    feats = [program_features(i) for i in data.items]
    report: dict[str, Any] = {"n": len(p), "problems": int(p.sum()), "l2": args.l2,
                              "version": data.version, "support": measure(base, p,
                                                                          data.datasets),
                              "sets": {}}
    alone: dict[str, dict[str, Any]] = {}
    for col in ("source_coverage", "passage_score", "strength"):
        values = np.array([f[col] for f in feats], dtype=float)
        alone[col] = {ds: auc(values[data.datasets == ds], p[data.datasets == ds])["value"]
                      for ds in sorted(set(data.datasets.tolist()))}
    alone["support (the head, out of fold)"] = {
        ds: auc(fit.probs[data.datasets == ds, 0], p[data.datasets == ds])["value"]
        for ds in sorted(set(data.datasets.tolist()))}
    report["auc_alone_per_dataset"] = alone
    for name, per in alone.items():
        print(f"AUC alone, {name}: {per}")
    v1 = None
    for name, cols in SETS.items():
        x = np.array([[f[c] for c in cols] for f in feats], dtype=float)
        scores, w = stacked_scores(base, x, ~p, folds)
        if v1 is None:
            v1 = scores
        entry = {"features": list(cols), "weights_on_all": [round(float(v), 4) for v in w],
                 "measure": measure(scores, p, data.datasets),
                 "against_support": paired(base, scores, p, groups, args.bootstrap),
                 "against_stacked_v1": (paired(v1, scores, p, groups, args.bootstrap)
                                        if scores is not v1 else None)}
        report["sets"][name] = entry
        table(name, entry["measure"])
        print("   vs support:", entry["against_support"]["0.9/0.9"]["false_alarm"])
        if entry["against_stacked_v1"]:
            print("   vs stacked-v1:", entry["against_stacked_v1"]["0.9/0.9"]["false_alarm"])
    table("support", report["support"])
    report.update(command=" ".join(sys.argv),
                  written_at=datetime.now(UTC).isoformat(timespec="seconds"))
    if args.output:
        args.output.write_text(json.dumps(report, indent=2, default=json_default) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
