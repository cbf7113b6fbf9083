"""Variants of the probe head and of its prompt, compared by grouped cross-validation on the
*tuning* split only, from stored vectors (no model call; the check split is not read).

    python research/probe_variants.py --db out/probe.db --version V1_VERSION \
        [--other-db out/probe_v2.db --other-version V2_VERSION] \
        [--output research/reports/probe_variants.json]

Head variants on the ``--version`` vectors (the default head's prompt, ``probe_claim`` v1):

* ``label``: what ``judge fit`` does: class-balanced weights, standardised vectors;
* ``cell``: every dataset weighs the same and labels weigh the same within it;
* ``check``: the tuning claims reweighted to the check split's (dataset, label) counts;
* ``l2n``: each vector scaled to unit length before standardising;
* ``pcaK``: the first K principal components of the standardised vectors;
* the L2 strength.

Prompt variant: ``--other-version`` holds vectors of another prompt for a prefix of the same
tuning file; both prompts are compared on exactly the claims the other one judged, and so are
two reads of each claim: one head on both vectors side by side (``both``) and the mean of the
two heads' probabilities (``mean_of_two_heads``).

Every figure is out of fold (10 folds grouped by source document or conversation,
:func:`judge.fitting.split.folds_of`). ``check_weighted_ba`` weighs the out-of-fold verdicts
by the check split's (dataset, label) counts (``gold/eval_xl.manifest.json`` counts only, no
check claim is read): it asks whether the tuning-to-check gap comes from the mix of datasets.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.items import load_items  # noqa: E402
from judge.fitting.logistic import balanced_log_loss, fit_standardised  # noqa: E402
from judge.fitting.split import folds_of  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402

K = len(LABELS)


def check_counts() -> Counter[tuple[str, str]]:
    """(dataset, label) counts of the check subset, from its manifest."""
    manifest = json.loads((ROOT.parent / "gold" / "eval_xl.manifest.json").read_text())
    counts: Counter[tuple[str, str]] = Counter()
    for item in manifest["items"]:
        counts[(item["dataset"], item["label"])] += 1
    return counts


def load(db: Path, version: str, gold: Path) -> dict[str, Any]:
    store = Store.open(db)
    try:
        items = load_items(store, load_gold(gold), version).items
    finally:
        store.close()
    return {"ids": [i.gold_id for i in items],
            "x": np.vstack([np.asarray(i.vector, dtype=np.float64) for i in items]),
            "y": np.array([i.y for i in items]),
            "ds": np.array([i.dataset or "-" for i in items]),
            "fold": np.array(folds_of(items))}


def _normalise_per_label(w: np.ndarray, y: np.ndarray) -> np.ndarray:
    total = {k: w[y == k].sum() for k in range(K) if (y == k).any()}
    w = np.array([v / total[k] for v, k in zip(w, y, strict=True)])
    return w / w.mean()


def weights(y: np.ndarray, ds: np.ndarray, mode: str, check: Counter[tuple[str, str]]
            ) -> np.ndarray:
    cells = Counter(zip(ds.tolist(), y.tolist(), strict=True))
    if mode == "label":
        return _normalise_per_label(np.ones(len(y)), y)
    if mode == "cell":
        labels_in = Counter(d for d, _ in cells)
        w = np.array([1.0 / (cells[(d, k)] * labels_in[d]) for d, k in zip(ds, y, strict=True)])
        return _normalise_per_label(w, y)
    if mode == "check":
        w = np.array([check[(d, LABELS[k])] / cells[(d, k)] for d, k in zip(ds, y, strict=True)])
        return _normalise_per_label(w, y)
    raise ValueError(mode)


def features(train: np.ndarray, test: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    if how == "l2n":
        train = train / np.linalg.norm(train, axis=1, keepdims=True)
        test = test / np.linalg.norm(test, axis=1, keepdims=True)
    mu, sd = train.mean(0), train.std(0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    z_train, z_test = (train - mu) / sd, (test - mu) / sd
    if how.startswith("pca"):
        k = int(how[3:])
        _, s, vt = np.linalg.svd(z_train, full_matrices=False)
        scale = np.sqrt(len(z_train)) / s[:k]
        z_train, z_test = z_train @ vt[:k].T * scale, z_test @ vt[:k].T * scale
    return z_train, z_test


def out_of_fold(data: dict[str, Any], lam: float, mode: str, how: str,
                check: Counter[tuple[str, str]]) -> np.ndarray:
    x, y, ds, fold = data["x"], data["y"], data["ds"], data["fold"]
    probs = np.zeros((len(y), K))
    for f in sorted(set(fold.tolist())):
        held, rest = fold == f, fold != f
        z_rest, z_held = features(x[rest], x[held], how)
        m = fit_standardised(z_rest, y[rest], lam,
                             weight=weights(y[rest], ds[rest], mode, check))
        s = np.hstack([z_held, np.ones((int(held.sum()), 1))]) @ m
        s -= s.max(1, keepdims=True)
        probs[held] = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    return probs


def metrics(probs: np.ndarray, y: np.ndarray, ds: np.ndarray,
            check: Counter[tuple[str, str]]) -> dict[str, Any]:
    pred = probs.argmax(1)

    def ba(mask: np.ndarray) -> float:
        return round(float(np.mean([(pred[mask & (y == k)] == k).mean()
                                    for k in range(K) if (mask & (y == k)).any()])), 3)

    cells = Counter(zip(ds.tolist(), y.tolist(), strict=True))
    w = np.array([check[(d, LABELS[k])] / cells[(d, k)] for d, k in zip(ds, y, strict=True)])
    weighted = np.mean([np.sum(w[y == k] * (pred[y == k] == k)) / np.sum(w[y == k])
                        for k in range(K) if (y == k).any()])
    out: dict[str, Any] = {
        "n": int(len(y)), "balanced_accuracy": ba(np.ones(len(y), dtype=bool)),
        "check_weighted_ba": round(float(weighted), 3),
        "contradicted_recall": round(float((pred[y == 1] == 1).mean()), 3),
        "balanced_log_loss": round(balanced_log_loss(probs, y), 3),
        "per_dataset": {d: ba(ds == d) for d in sorted(set(ds.tolist()))},
    }
    return out


HEAD_VARIANTS = (("label", "std", 1000.0), ("label", "std", 300.0), ("label", "std", 3000.0),
                 ("cell", "std", 1000.0), ("check", "std", 1000.0), ("label", "l2n", 1000.0),
                 ("label", "pca64", 30.0), ("label", "pca128", 100.0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--other-db", type=Path)
    parser.add_argument("--other-version")
    parser.add_argument("--gold", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    check = check_counts()
    base = load(args.db, args.version, args.gold)
    report: dict[str, Any] = {"version": args.version, "heads": {}}
    with threadpool_limits(limits=1):
        for mode, how, lam in HEAD_VARIANTS:
            name = f"{mode}/{how}/l2={lam:g}"
            report["heads"][name] = metrics(out_of_fold(base, lam, mode, how, check),
                                            base["y"], base["ds"], check)
            print(name, json.dumps(report["heads"][name]), flush=True)
        if args.other_db and args.other_version:
            other = load(args.other_db, args.other_version, args.gold)
            where = {gid: k for k, gid in enumerate(base["ids"])}
            idx = np.array([where[gid] for gid in other["ids"]])
            same = {key: base[key][idx] for key in ("x", "y", "ds", "fold")}
            assert (same["y"] == other["y"]).all()
            report["prompts"] = {"other_version": args.other_version, "n": int(len(idx))}
            both = {**other, "x": np.hstack([same["x"], other["x"]])}
            for lam in (300.0, 1000.0, 3000.0):
                oof = {name: out_of_fold(data, lam, "label", "std", check)
                       for name, data in (("v1", same), ("other", other), ("both", both))}
                oof["mean_of_two_heads"] = (oof["v1"] + oof["other"]) / 2
                for name, probs in oof.items():
                    fig = metrics(probs, other["y"], other["ds"], check)
                    report["prompts"][f"{name}/l2={lam:g}"] = fig
                    print(name, lam, json.dumps(fig), flush=True)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
