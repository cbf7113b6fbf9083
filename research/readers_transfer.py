"""Which reader of the model's state, which weighting of the pool and which L2 strength
transfer to data the head was not fitted on (issue 49): every figure out of fold, from the
shards of research/collect_readers.py, 0 model calls.

    python research/readers_transfer.py [--vectors research/vectors/L21 ...]
        [--readers last claim_mean last+claim_mean ...] [--weightings dataset+label ...]
        [--lambdas 100 1000 10000] [--output research/reports/readers_transfer_L21.json]

For each candidate (reader or readers concatenated, weighting of judge.fitting.weights, L2
strength), on the claims collected so far:

- **leave one dataset out**: a head fitted on every other dataset of the pool, read on the
  dataset left out: binary balanced accuracy (the head's label is ``supported`` or not, against
  the person's), ROC AUC of P(supported), and 4-label balanced accuracy on the datasets whose
  people gave three or more labels;
- **10 folds grouped by source document or conversation** over the whole pool
  (judge.fitting.split.bucket of the group, as the product's fit): the same figures per
  dataset.

Each figure carries a 95% interval: a bootstrap over the dataset's groups (seeded) for the
balanced accuracies, Hanley-McNeil for the AUC. The choice is made on the leave-one-dataset-out
figures (their mean over datasets of the binary balanced accuracy first, then of the AUC);
fresh_check.jsonl and OCNLI are never read here.

SummEdits' people said only "consistent" or "inconsistent": its inconsistent summaries are
fitted as the label *set* {contradicted, not_in_source} (judge.fitting.logistic, ``allowed``)
and measured binary only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
sys.path.insert(0, str(REPO))

from calibration.stats import roc_auc  # noqa: E402
from judge.evaluation.gold import read_gold  # noqa: E402
from judge.fitting.items import group_of  # noqa: E402
from judge.fitting.logistic import balanced_accuracy, fit_standardised  # noqa: E402
from judge.fitting.split import bucket  # noqa: E402
from judge.fitting.weights import pool_weights  # noqa: E402
from judge.models.readers import parse_readers  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402
from research.collect_readers import POOL  # noqa: E402

SUPPORTED = LABELS.index("supported")
#: datasets whose people judged supported or not only
BINARY_ONLY = ("summedits",)
#: datasets measured per document (many claims a document)
PER_DOCUMENT = ("summedits",)
NOT_SUPPORTED_SET = ("contradicted", "not_in_source")


@dataclass
class Pool:
    ids: list[str]
    datasets: np.ndarray
    groups: list[str]
    y: np.ndarray          # label index (SummEdits: its hint, never a person's label)
    classes: list[str]     # the person's class (SummEdits: supported / not_supported)
    allowed: np.ndarray    # n x labels
    vectors: dict[str, np.ndarray]

    def first(self, n: int) -> Pool:
        """The first ``n`` claims in collection order (a fixed random order of the pool, so
        a prefix is a random sample of it): the learning curve's pools."""
        return Pool(self.ids[:n], self.datasets[:n], self.groups[:n], self.y[:n],
                    self.classes[:n], self.allowed[:n],
                    {k: v[:n] for k, v in self.vectors.items()})

    def x(self, readers: str) -> np.ndarray:
        """The vectors of ``readers``: reader names joined by ``+``, each of the first
        ``--vectors`` folder or written ``L16:claim_mean`` for another folder's."""
        keys = []
        for part in readers.split("+"):
            layer, _, name = part.strip().rpartition(":")
            (name,) = parse_readers(name)
            keys.append(f"{layer}:{name}" if layer else name)
        return np.hstack([self.vectors[k] for k in keys]).astype(np.float64)


def label_sets(datasets: list[str], labels: list[str]) -> tuple[list[str], np.ndarray]:
    """The class people gave each claim (SummEdits: supported / not_supported, its 4-label
    split being a model's hint) and the labels each may be fitted as (n x labels)."""
    classes = [("supported" if lab == "supported" else "not_supported") if ds in BINARY_ONLY
               else lab for ds, lab in zip(datasets, labels, strict=True)]
    allowed = np.zeros((len(labels), len(LABELS)), dtype=bool)
    for k, (cls, lab) in enumerate(zip(classes, labels, strict=True)):
        for name in (NOT_SUPPORTED_SET if cls == "not_supported" else (lab,)):
            allowed[k, LABELS.index(name)] = True
    return classes, allowed


def load_pool(folders: list[Path], gold: list[Path]) -> Pool:
    meta: dict[str, tuple[str, str, str]] = {}
    for path in gold:
        for entry in read_gold(path).entries:
            item = entry.item
            meta[item.id] = (item.dataset or path.stem, item.label,
                             group_of(item.id, item.answer_id, item.id))
    # per folder (layer), each id's row of each reader: the latest shard's when an id was read
    # again (its prompt changed); the pool is the ids every folder holds, in the first
    # folder's collection order
    rows: list[dict[str, dict[str, np.ndarray]]] = []
    order: list[str] = []
    for folder in folders:
        found: dict[str, dict[str, np.ndarray]] = {}
        for shard in sorted(folder.glob("shard-*.npz")):
            with np.load(shard) as data:
                names = [n for n in data.files if data[n].ndim == 2]
                arrays = {n: data[n] for n in names}
                for k, i in enumerate(data["ids"]):
                    if str(i) in meta:
                        if folder == folders[0] and str(i) not in found:
                            order.append(str(i))
                        found[str(i)] = {n: arrays[n][k] for n in names}
        rows.append(found)
    ids = [i for i in order if all(i in found for found in rows)]
    vectors: dict[str, np.ndarray] = {}
    for folder, found in zip(folders, rows, strict=True):
        for name in found[ids[0]] if ids else ():
            key = name if folder == folders[0] else f"{folder.name}:{name}"
            vectors[key] = np.vstack([found[i][name] for i in ids])
    datasets = np.array([meta[i][0] for i in ids])
    labels = [meta[i][1] for i in ids]
    classes, allowed = label_sets([str(d) for d in datasets], labels)
    return Pool(ids, datasets, [meta[i][2] for i in ids],
                np.array([LABELS.index(lab) for lab in labels]), classes, allowed, vectors)


def fit_inputs(pool: Pool, x: np.ndarray, rest: np.ndarray, held: np.ndarray, weighting: str
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rest's and the held claims' vectors standardised on the rest, and the rest's
    weights (``weighting`` of judge.fitting.weights): what a head is fitted and read on."""
    xr = x[rest]
    mu, sd = xr.mean(0), xr.std(0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    w = pool_weights([str(d) for d in pool.datasets[rest]], [pool.classes[i] for i in rest],
                     [LABELS[pool.y[i]] for i in rest], [pool.groups[i] for i in rest],
                     weighting, PER_DOCUMENT)
    return (xr - mu) / sd, (x[held] - mu) / sd, w


def fit_predict(pool: Pool, x: np.ndarray, rest: np.ndarray, held: np.ndarray, lam: float,
                weighting: str) -> np.ndarray:
    """P(label) of the held claims from a head fitted on the rest."""
    xs, xh, w = fit_inputs(pool, x, rest, held, weighting)
    coef = fit_standardised(xs, pool.y[rest], lam, weight=w, allowed=pool.allowed[rest])
    s = np.hstack([xh, np.ones((len(held), 1))]) @ coef
    p = np.exp(s - s.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)  # type: ignore[no-any-return]


def group_bootstrap(values: Any, groups: list[str], draws: int = 200, seed: int = 0
                    ) -> tuple[float, float]:
    """95% interval of ``values(rows)`` over a bootstrap of whole groups."""
    rng = np.random.default_rng(seed)
    names = sorted(set(groups))
    rows_of: dict[str, list[int]] = {}
    for k, g in enumerate(groups):
        rows_of.setdefault(g, []).append(k)
    out = []
    for _ in range(draws):
        pick = rng.integers(len(names), size=len(names))
        rows = np.concatenate([rows_of[names[j]] for j in pick])
        v = values(rows)
        if np.isfinite(v):
            out.append(v)
    if not out:
        return float("nan"), float("nan")
    return float(np.percentile(out, 2.5)), float(np.percentile(out, 97.5))


def figures(pool: Pool, rows: np.ndarray, probs: np.ndarray) -> dict[str, Any]:
    """The figures of one dataset's claims ``rows`` given their probabilities."""
    y = pool.y[rows]
    supported = y == SUPPORTED
    pred = probs.argmax(1)
    said_supported = pred == SUPPORTED
    groups = [pool.groups[i] for i in rows]

    def binary(r: np.ndarray) -> float:
        t = supported[r]
        if t.all() or not t.any():
            return float("nan")
        return balanced_accuracy(said_supported[r], t)

    out: dict[str, Any] = {"n": int(len(rows))}
    every = np.arange(len(rows))
    out["binary_ba"] = [round(binary(every), 4), *map(lambda v: round(v, 4),
                                                       group_bootstrap(binary, groups))]
    a = roc_auc(probs[supported, SUPPORTED], probs[~supported, SUPPORTED])
    out["auc"] = [round(a.value, 4), round(a.ci_low, 4), round(a.ci_high, 4)]
    dataset = str(pool.datasets[rows[0]])
    if dataset not in BINARY_ONLY and len(set(y.tolist())) >= 3:
        def four(r: np.ndarray) -> float:
            return (balanced_accuracy(pred[r], y[r]) if len(set(y[r].tolist())) >= 2
                    else float("nan"))
        out["four_ba"] = [round(four(every), 4), *map(lambda v: round(v, 4),
                                                     group_bootstrap(four, groups))]
        if (y == LABELS.index("contradicted")).any():
            c = y == LABELS.index("contradicted")
            out["contradicted_recall"] = round(float((pred[c] == y[c]).mean()), 4)
    return out


def evaluate(pool: Pool, readers: str, weighting: str, lam: float) -> dict[str, Any]:
    x = pool.x(readers)
    started = time.perf_counter()
    lodo = per_dataset(pool, lodo_probs(pool, x, weighting, lam))
    fold = np.array([bucket(g, 0) % 10 for g in pool.groups])
    probs = np.zeros((len(pool.ids), len(LABELS)))
    for f in range(10):
        held, rest = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
        probs[held] = fit_predict(pool, x, rest, held, lam, weighting)
    folds = per_dataset(pool, probs)
    return {"readers": readers, "weighting": weighting, "l2": lam, "dim": int(x.shape[1]),
            "seconds": round(time.perf_counter() - started, 1),
            "lodo": lodo, "folds": folds, "summary": summary(lodo, folds)}


def read_head(pool: Pool, path: Path, texts: dict[str, str]) -> dict[str, Any]:
    """A fitted head file (e.g. a packaged head, fitted on other claims) read on each dataset
    of the pool, with the figures of the leave-one-dataset-out: on a dataset the head was not
    fitted on, they compare with that dataset's out-of-dataset figures. ``texts``: each id's
    claim, by which a head with a language offset knows what it reads (the pool is English)."""
    from judge.decide.probe_head import from_dict

    head = from_dict(json.loads(path.read_text(encoding="utf-8")))
    return per_dataset(pool, head.probabilities(pool.x("last"),
                                                [texts.get(i, "") for i in pool.ids]))


def per_dataset(pool: Pool, probs: np.ndarray) -> dict[str, Any]:
    """The figures of each dataset of the pool given every claim's probabilities."""
    return {ds: figures(pool, np.flatnonzero(pool.datasets == ds), probs[pool.datasets == ds])
            for ds in sorted(set(pool.datasets.tolist()))}


def claim_texts(gold: list[Path]) -> dict[str, str]:
    return {e.item.id: e.item.claim for path in gold for e in read_gold(path).entries}


def summary(lodo: dict[str, Any], folds: dict[str, Any]) -> dict[str, float]:
    def mean(block: dict[str, Any], key: str) -> float:
        vals = [v[key][0] for v in block.values() if key in v and np.isfinite(v[key][0])]
        return round(float(np.mean(vals)), 4) if vals else float("nan")

    return {"lodo_binary_ba": mean(lodo, "binary_ba"), "lodo_auc": mean(lodo, "auc"),
            "lodo_four_ba": mean(lodo, "four_ba"), "lodo_min_binary_ba": round(min(
                v["binary_ba"][0] for v in lodo.values()), 4),
            "folds_binary_ba": mean(folds, "binary_ba"), "folds_auc": mean(folds, "auc"),
            "folds_four_ba": mean(folds, "four_ba")}


def line(result: dict[str, Any]) -> str:
    s = result["summary"]
    per = " ".join(f"{ds[:8]}={v['binary_ba'][0]:.2f}/{v['auc'][0]:.2f}"
                   for ds, v in result["lodo"].items())
    return (f"{result['readers']:<34} {result['weighting']:<13} l2={result['l2']:<7g} "
            f"LODO bin {s['lodo_binary_ba']:.3f} auc {s['lodo_auc']:.3f} 4-lab "
            f"{s['lodo_four_ba']:.3f} | folds bin {s['folds_binary_ba']:.3f} auc "
            f"{s['folds_auc']:.3f} 4-lab {s['folds_four_ba']:.3f} | {per}")


def lodo_probs(pool: Pool, x: np.ndarray, weighting: str, lam: float) -> np.ndarray:
    """Every claim's probabilities from the head fitted without its dataset (``x``: the
    candidate's vectors, :meth:`Pool.x`)."""
    probs = np.zeros((len(pool.ids), len(LABELS)))
    for ds in sorted(set(pool.datasets.tolist())):
        held = np.flatnonzero(pool.datasets == ds)
        rest = np.flatnonzero(pool.datasets != ds)
        probs[held] = fit_predict(pool, x, rest, held, lam, weighting)
    return probs


def paired_lodo(pool: Pool, base: np.ndarray, other: np.ndarray, draws: int = 300,
                seed: int = 0) -> dict[str, list[float]]:
    """``other`` against ``base`` (each claim's leave-one-dataset-out probabilities): the
    change in the mean over datasets of the binary balanced accuracy and of the ROC AUC, with
    95% intervals from a bootstrap of whole groups within each dataset (the same draw for
    both, so the noise they share cancels)."""
    supported = pool.y == SUPPORTED
    groups: dict[str, dict[str, list[int]]] = {}
    for k, (ds, g) in enumerate(zip(pool.datasets.tolist(), pool.groups, strict=True)):
        groups.setdefault(ds, {}).setdefault(g, []).append(k)

    def means(probs: np.ndarray, rows: dict[str, np.ndarray]) -> tuple[float, float]:
        ba, auc = [], []
        for r in rows.values():
            t = supported[r]
            ba.append(balanced_accuracy(probs[r].argmax(1) == SUPPORTED, t))
            auc.append(roc_auc(probs[r][t, SUPPORTED], probs[r][~t, SUPPORTED]).value)
        return float(np.mean(ba)), float(np.mean(auc))

    def change(rows: dict[str, np.ndarray]) -> np.ndarray:
        return np.subtract(means(other, rows), means(base, rows))

    every = {ds: np.concatenate(list(gs.values())) for ds, gs in groups.items()}
    rng = np.random.default_rng(seed)
    drawn = []
    for _ in range(draws):
        rows = {}
        for ds, gs in groups.items():
            keys = list(gs)
            rows[ds] = np.concatenate([gs[keys[j]] for j in rng.integers(len(keys),
                                                                        size=len(keys))])
        drawn.append(change(rows))
    point, low, high = change(every), np.percentile(drawn, 2.5, 0), np.percentile(drawn, 97.5, 0)
    return {"binary_ba": [round(float(v), 4) for v in (point[0], low[0], high[0])],
            "auc": [round(float(v), 4) for v in (point[1], low[1], high[1])]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=Path, nargs="+",
                        default=[ROOT / "vectors" / "L21"])
    parser.add_argument("--gold", type=Path, nargs="+", default=POOL)
    parser.add_argument("--readers", nargs="+", default=[
        "last", "claim_mean", "claim_max", "evidence_mean", "last+claim_mean",
        "last+claim_max", "claim_mean+claim_max", "last+claim_mean+evidence_mean"])
    parser.add_argument("--weightings", nargs="+", default=["label", "dataset+label"])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[300.0, 3000.0])
    parser.add_argument("--first", type=int, nargs="+", default=None, metavar="N",
                        help="the learning curve: each candidate on the first N claims "
                             "collected (a random sample of the pool), for each N")
    parser.add_argument("--head", type=Path, nargs="+", default=[],
                        help="also read these fitted head files (reader last) on every "
                             "dataset of the pool, e.g. a packaged head fitted on other claims")
    parser.add_argument("--paired", nargs=2, metavar="READERS@L2", default=None,
                        help="also compare two candidates (first weighting) claim by claim "
                             "left one dataset out: the second against the first, with a "
                             "paired bootstrap of groups, e.g. last@3000 last+claim_mean@3000")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    for path in args.gold:
        if "fresh_check" in path.name or "ocnli" in path.name:
            parser.error(f"{path} is held back or measure-only: never read here")
    pool = load_pool(args.vectors, args.gold)
    print(f"{len(pool.ids)} claims collected: {dict(Counter(pool.datasets.tolist()))}",
          flush=True)
    results = []
    sizes = sorted(set(args.first)) if args.first else [len(pool.ids)]
    with threadpool_limits(limits=1, user_api="blas"):
        for size in sizes:
            part = pool.first(size) if size < len(pool.ids) else pool
            for readers in args.readers:
                for weighting in args.weightings:
                    for lam in args.lambdas:
                        result = {"n": len(part.ids), **evaluate(part, readers, weighting, lam)}
                        results.append(result)
                        print(f"n={len(part.ids):<5} " + line(result), flush=True)
    heads: dict[str, Any] = {}
    if args.head:
        texts = claim_texts(args.gold)
        for path in args.head:
            heads[path.stem] = read_head(pool, path, texts)
            per = " ".join(f"{ds[:8]}={v['binary_ba'][0]:.2f}/{v['auc'][0]:.2f}"
                           for ds, v in heads[path.stem].items())
            print(f"head {path.stem}: {per}", flush=True)
    paired: dict[str, Any] = {}
    if args.paired:
        (ra, la), (rb, lb) = (p.rsplit("@", 1) for p in args.paired)
        with threadpool_limits(limits=1, user_api="blas"):
            paired = {"base": args.paired[0], "other": args.paired[1], **paired_lodo(
                pool, lodo_probs(pool, pool.x(ra), args.weightings[0], float(la)),
                lodo_probs(pool, pool.x(rb), args.weightings[0], float(lb)))}
        print(f"paired, {args.paired[1]} against {args.paired[0]} (mean over datasets, left "
              f"out, 95% interval): binary BA {paired['binary_ba']}, AUC {paired['auc']}")
    largest = max(r["n"] for r in results)  # chosen on the largest pool measured
    best = max((r for r in results if r["n"] == largest),
               key=lambda r: (r["summary"]["lodo_binary_ba"],
                                       r["summary"]["lodo_auc"]))
    print("chosen on leave-one-dataset-out:", line(best))
    if args.output:
        report = {
            "command": "python " + " ".join(shlex.quote(a) for a in
                                             ["research/readers_transfer.py", *(argv or
                                                                                sys.argv[1:])]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "n": len(pool.ids), "per_dataset": dict(Counter(pool.datasets.tolist())),
            "ids_sha256": hashlib.sha256("\n".join(sorted(pool.ids)).encode()).hexdigest(),
            "results": results, "heads": heads, "paired": paired,
            "chosen": {k: best[k] for k in ("readers", "weighting", "l2")}}
        args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
