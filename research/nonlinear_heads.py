"""Issue 32, tuning folds only: do non-linear heads on the probe's vectors rank claims better
than the linear head? Every score is out of fold (10 folds grouped by source, the linear head
at L2 300, as ``research/stack_triage.py``): k nearest neighbours (cosine on standardised
vectors) alone and blended with the linear head's support logit, and random Fourier features
of 128 principal components under a class-balanced ridge logistic. Printed per score: ROC AUC,
false alarms at exactly 90% recall, and false alarms and load at the 0.9 / 90% point (the
claims the queue always takes at -inf). No held-back file is read.

    python research/nonlinear_heads.py [--db out/dev_all.db] \
        [--output research/reports/nonlinear_heads.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from research.triage import (  # noqa: E402
    DEFAULT_VERSION,
    at_threshold,
    auc,
    cv_fit,
    flag_scores,
    load,
    operating_point,
    oracle,
    snapshot,
    threshold_of,
)

RFF_FEATURES = 2048


def out_of_fold(folds: np.ndarray, fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray]
                ) -> np.ndarray:
    out = np.zeros(len(folds))
    for f in sorted(set(folds.tolist())):
        test = folds == f
        out[test] = fit_predict(~test, test)
    return out


def ridge_logistic(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Class-balanced binary logistic with an L2 penalty on the slopes; weights, intercept
    last."""
    z = np.hstack([x, np.ones((len(x), 1))])
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        p = 1 / (1 + np.exp(-np.clip(z @ w, -35, 35)))
        value = -(weight * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))).sum()
        grad = z.T @ (weight * (p - y))
        grad[:-1] += 2 * lam * w[:-1]
        return float(value + lam * (w[:-1] ** 2).sum()), grad

    result: np.ndarray = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B").x
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "dev_all.db")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    tuning = ROOT / "tuning_subset.jsonl"
    data = load(snapshot(args.db, None), [ROOT.parent / "gold" / "eval_all.jsonl", tuning],
                DEFAULT_VERSION, tuning)
    fit = cv_fit(data.x, data.y, data.fold, lambdas=[300.0])
    base = flag_scores(data, np.arange(len(data.items)), fit.pred, fit.probs[:, 0])
    problems, folds = data.problems, np.asarray(data.fold)
    supported = (~problems).astype(float)
    report: dict[str, Any] = {"n": len(problems), "scores": {}}

    def measure(name: str, score: np.ndarray) -> None:
        flag = np.where(np.isfinite(base), score, -np.inf)
        at = at_threshold(flag, problems, threshold_of(operating_point(flag, problems, 0.9,
                                                                        0.9)))
        entry = {"auc": auc(score, problems)["value"],
                 "false_alarm_at_exactly_90": oracle(flag, problems)["false_alarm"]["value"],
                 "false_alarm_0.9_0.9": at["false_alarm"]["value"],
                 "load_0.9_0.9": at["load"]["value"]}
        report["scores"][name] = entry
        print(name, entry, flush=True)

    support = np.clip(fit.probs[:, 0], 1e-6, 1 - 1e-6)
    measure("linear head (support)", support)
    logit = np.log(support / (1 - support))
    x = data.x
    z = (x - x.mean(0)) / np.where(x.std(0) > 1e-8, x.std(0), 1)
    unit = z / np.linalg.norm(z, axis=1, keepdims=True)
    for k in (15, 40):
        def knn(train: np.ndarray, test: np.ndarray, k: int = k) -> np.ndarray:
            nearest = np.argsort(-(unit[test] @ unit[train].T), axis=1)[:, :k]
            return np.asarray(supported[train][nearest].mean(1))

        share = out_of_fold(folds, knn)
        measure(f"knn{k}", share)
        for a in (0.5, 1.0, 2.0):
            measure(f"linear logit + {a} x knn{k}", logit + a * 4 * (share - 0.5))
    centred = z - z.mean(0)
    components = centred @ np.linalg.svd(centred, full_matrices=False)[2][:128].T
    components /= components.std(0)
    rng = np.random.default_rng(0)
    for gamma in (0.3, 1.0):
        w = rng.normal(0, math.sqrt(gamma / 128), (128, RFF_FEATURES))
        b = rng.uniform(0, 2 * math.pi, RFF_FEATURES)
        phi = np.cos(components @ w + b)
        phi = (phi - phi.mean(0)) / (phi.std(0) + 1e-9)
        for lam in (30.0, 300.0):
            def rff(train: np.ndarray, test: np.ndarray, lam: float = lam,
                    phi: np.ndarray = phi) -> np.ndarray:
                v = ridge_logistic(phi[train], supported[train], lam)
                return np.asarray(1 / (1 + np.exp(-(phi[test] @ v[:-1] + v[-1]))))

            measure(f"random Fourier features, gamma {gamma}, L2 {lam}",
                    out_of_fold(folds, rff))
    report["command"] = "python research/nonlinear_heads.py " + " ".join(argv or sys.argv[1:])
    if args.output:
        args.output.write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
