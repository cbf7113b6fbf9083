"""Fit the ``scores`` strategy's linear decision rule (``score_model``, judge.decide.linear) on the
*tuning* split only, from stored calls (no model call).

    python research/fit_linear.py --db out/tune/scores.db --version VERSION \
        [--gold research/tuning_subset.jsonl] [--output research/reports/tuning_linear.json] \
        [--toml research/configs/scores_v1_linear.toml]

Class-balanced multinomial logistic regression over judge.config.score_model.CORE_FEATURES (plus
TEXT_FEATURES with ``--text-features``, and the per-sentence or fill-the-blank features when
the run asked those questions), standardised for the fit and written back in raw units, with
an L2 penalty on the weights. The penalty strength
is chosen from ``LAMBDAS`` by grouped 10-fold cross-validated class-balanced log-loss (items
of one group share a fold; a proper scoring rule keeps the probabilities the queue reads
honest); each grid value is a configuration tried, and so is each
``review_support_below`` value of the queue search (the smallest whose queue catches
``--queue-recall`` of the human-rejected tuning claims, judged out of fold, with 95%
confidence).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from tune_scores import (  # noqa: E402
    LABELS,
    QUEUE_GRID,
    Item,
    balanced_accuracy,
    fold_of,
    load_items,
    per_dataset,
    shown_path,
    stored_config,
)

from calibration.stats import wilson_bounds  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.config.score_model import CORE_FEATURES, TEXT_FEATURES, ScoreModel
from judge.decide.linear import decide_linear

LAMBDAS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
RULE_PROMPTS = ("split_claims", "choose_label")
DECIMALS = 4


def matrix(items: list[Item], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[i.features[f] for f in names] for i in items])  # type: ignore[index]
    return x, np.array([i.gold for i in items])


def fit(x: np.ndarray, y: np.ndarray, lam: float, names: tuple[str, ...]) -> ScoreModel:
    """Class-balanced, L2-penalised multinomial logistic regression; weights in raw units."""
    n, d = x.shape
    k = len(LABELS)
    mu, sd = x.mean(0), x.std(0)
    sd[sd == 0] = 1.0
    z = np.hstack([(x - mu) / sd, np.ones((n, 1))])
    present = [c for c in range(k) if (y == c).any()]
    weight = np.array([1.0 / np.mean(y == c) if c in present else 0.0 for c in range(k)])[y]
    weight /= weight.mean()
    onehot = np.eye(k)[y]

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(d + 1, k)
        s = z @ w
        s -= s.max(1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(1, keepdims=True)
        value = -(weight * np.log(p[np.arange(n), y] + 1e-12)).sum() + lam * (w[:-1] ** 2).sum()
        grad = z.T @ ((p - onehot) * weight[:, None])
        grad[:-1] += 2 * lam * w[:-1]
        return float(value), grad.ravel()

    w = minimize(loss, np.zeros((d + 1) * k), jac=True, method="L-BFGS-B").x.reshape(d + 1, k)
    raw = w[:-1] / sd[:, None]
    intercept = w[-1] - (mu[:, None] * raw).sum(0)
    return ScoreModel(
        weights={LABELS[c]: {f: round(float(raw[j, c]), DECIMALS) for j, f in enumerate(names)}
                 for c in range(k)},
        intercept={LABELS[c]: round(float(intercept[c]), DECIMALS) for c in range(k)},
    )


def predict(items: list[Item], model: ScoreModel) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities per label) exactly as the pipeline decides
    (judge.decide.linear.decide_linear); column 0 is P(supported)."""
    out = [decide_linear(i.features or {}, model) for i in items]
    return (np.array([LABELS.index(label) for label, _ in out]),
            np.array([[probs[label] for label in LABELS] for _, probs in out]))


def balanced_log_loss(probs: np.ndarray, y: np.ndarray) -> float:
    """Mean over the gold labels present of the mean -log P(gold label): a proper scoring
    rule, so the penalty it picks keeps the probabilities (which the queue threshold reads)
    honest, where balanced accuracy only looks at the argmax."""
    loss = -np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, 1.0))
    return float(np.mean([loss[y == k].mean() for k in range(len(LABELS)) if (y == k).any()]))


def out_of_fold(items: list[Item], lam: float, names: tuple[str, ...], folds: int = 10
                ) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities) of each item from a rule fitted without its fold."""
    pred = np.zeros(len(items), dtype=int)
    probs = np.zeros((len(items), len(LABELS)))
    fold = np.array([fold_of(i.id, folds) for i in items])
    for f in range(folds):
        held = np.flatnonzero(fold == f)
        if not len(held):
            continue
        rest = [items[j] for j in np.flatnonzero(fold != f)]
        model = fit(*matrix(rest, names), lam, names)
        pred[held], probs[held] = predict([items[j] for j in held], model)
    return pred, probs


def queue_threshold(pred: np.ndarray, p_s: np.ndarray, y: np.ndarray, recall: float) -> dict:
    """The smallest ``review_support_below`` whose queue catches ``recall`` of the
    human-rejected claims with 95% confidence: the lower Wilson bound of the measured recall
    must reach it (a point estimate that merely reaches it misses it on new claims about
    half the time)."""
    rejected = y != 0
    chosen = QUEUE_GRID[-1]
    for t in QUEUE_GRID:
        caught = ((pred != 0) | (p_s < t))[rejected]
        if wilson_bounds(float(caught.mean()), len(caught))[0] >= recall:
            chosen = t
            break
    review = (pred != 0) | (p_s < chosen)
    return {"review_support_below": float(chosen),
            "queue_recall": round(float(review[rejected].mean()), 3),
            "queue_load": round(float(review.mean()), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", required=True, help="judge version of the scores run")
    parser.add_argument("--gold", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--queue-recall", type=float, default=0.9)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--toml", type=Path, help="also write the judge config it fitted")
    parser.add_argument("--first", type=int,
                        help="fit on the first N items of --gold only (the tuning rounds only "
                             "append, so --first 244 reproduces a fit made before round 3)")
    parser.add_argument("--text-features", action="store_true",
                        help="also weigh judge.config.score_model.TEXT_FEATURES (person, question, "
                             "best single-sentence coverage)")
    args = parser.parse_args()
    config = JudgeConfig.load()
    items = load_items(args.gold, args.db, [args.version], config, args.first)
    if not items:
        print("no scored tuning items found", file=sys.stderr)
        return 1
    names = CORE_FEATURES + (TEXT_FEATURES if args.text_features else ())
    y = np.array([i.gold for i in items])
    oof = {lam: out_of_fold(items, lam, names) for lam in LAMBDAS}
    cv = {lam: balanced_accuracy(oof[lam][0], y) for lam in LAMBDAS}
    cv_loss = {lam: balanced_log_loss(oof[lam][1], y) for lam in LAMBDAS}
    lam = min(LAMBDAS, key=lambda v: (cv_loss[v], -v))  # ties: the stronger penalty
    model = fit(*matrix(items, names), lam, names)
    pred, _ = predict(items, model)
    # the queue threshold is chosen on out-of-fold verdicts: in-sample ones are optimistic,
    # so a threshold fitted on them misses the recall target on new claims
    queue = queue_threshold(oof[lam][0], oof[lam][1][:, 0], y, args.queue_recall)
    report = {
        "gold": shown_path(args.gold), "version": args.version, "n": len(items),
        "features": list(names),
        "configurations_tried": len(LAMBDAS) + len(QUEUE_GRID),
        "cross_validated_balanced_accuracy": {str(k): round(v, 3) for k, v in cv.items()},
        "cross_validated_balanced_log_loss": {str(k): round(v, 4) for k, v in cv_loss.items()},
        "l2": lam,
        "score_model": model.model_dump(),
        "review_support_below": queue["review_support_below"],
        "tuning_fit": {
            "balanced_accuracy": round(balanced_accuracy(pred, y), 3),
            "cross_validated_balanced_accuracy": round(cv[lam], 3),
            "accuracy": round(float((pred == y).mean()), 3),
            "recall": {LABELS[k]: round(float((pred[y == k] == k).mean()), 3)
                       for k in range(4) if (y == k).any()},
            "queue_recall_out_of_fold": queue["queue_recall"],
            "queue_load_out_of_fold": queue["queue_load"],
            "per_dataset": per_dataset(items, pred),
        },
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    if args.toml:
        stored = stored_config(args.db, args.version)
        args.toml.write_text(config_toml(model, queue["review_support_below"], args, stored),
                             "utf-8")
    return 0


def config_toml(model: ScoreModel, review_below: float, args: argparse.Namespace,
                stored: dict) -> str:
    """The judge config of the fitted rule: the model, prompt versions and abstention check
    of the run it was fitted on (``stored``: its versioned settings), so the rule is only
    ever used on the answers it was fitted to read."""
    asked = {"split_claims": "v1", "choose_label": "v1", **(stored.get("prompts") or {})}
    # the prompts whose answers the rule reads (a question it does not weigh is not asked)
    prompts = {name: asked[name] for name in RULE_PROMPTS if name in asked}
    lines = [
        f"# Written by research/fit_linear.py from {args.version} on {args.gold.name} (tuning",
        "# split only); see the fit's report for its cross-validated figures.",
        "[judge]",
        f"model = {json.dumps(stored.get('model', JudgeConfig().model))}",
        'strategy = "scores"',
        "signals = false",  # the signals are the score_model's features, never overrides
        "prompts = { " + ", ".join(f"{name} = {json.dumps(version)}"
                                   for name, version in prompts.items()) + " }",
        f"review_support_below = {review_below}",
        f"abstention_check = {str(bool(stored.get('abstention_check', True))).lower()}",
        "",
        "[judge.score_model.intercept]",
        *(f"{label} = {value}" for label, value in model.intercept.items()),
    ]
    for label, row in model.weights.items():
        lines += ["", f"[judge.score_model.weights.{label}]",
                  *(f"{name} = {value}" for name, value in row.items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
