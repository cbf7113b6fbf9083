"""The stacked flag score (issue 32's next lever) against the support score, out of fold on
the dev gold, and (``--fresh``, once) on a held-back gold file from stored verdicts.

    python research/stack_triage.py [--db out/dev_all.db] [--l2 300] \
        [--output research/reports/stack_triage.json]
    python research/stack_triage.py --fresh ../shared/gold/external/fresh_check.jsonl \
        --fresh-db out/fresh.db --fresh-version VERSION --points judge/config/operating/F.json

Tuning: each claim's support is P(supported) from a head fitted without its fold (10 folds
grouped by source, :func:`research.triage.cv_fit` at ``--l2``: 300 is what the grouped-CV
rule chose on these claims); its flag score under the support-only point is
:func:`research.triage.flag_scores`; the stacked weights are fitted out of fold on the same
folds (:func:`judge.fitting.stack.fit_stack`). For both scores the threshold is set by the
exact binomial bound at 0.9 recall with 90% and 95% confidence, and recall, false alarms and
load are reported overall and per dataset with Wilson 95% intervals, beside ROC AUC and the
false alarms at exactly 90% recall.

Fresh: the gold file's claims matched to the stored verdicts of ``--fresh-version`` (0 model
calls), scored by :func:`judge.evaluation.operating.gold_scores` under each packaged point of
``--points`` (its support-only points, ``support_only_points``, and its stacked points), the
packaged thresholds applied.
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

from judge.fitting.stack import fit_stack  # noqa: E402
from research.triage import (  # noqa: E402
    DATASETS,
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

POINTS = ((0.9, 0.9), (0.9, 0.95))


def measure(scores: np.ndarray, problems: np.ndarray, datasets: np.ndarray
            ) -> dict[str, Any]:
    out: dict[str, Any] = {"auc": auc(scores, problems), "oracle_0.9": oracle(scores, problems),
                           "points": {}}
    for t, c in POINTS:
        op = operating_point(scores, problems, t, c)
        thr = threshold_of(op)
        entry: dict[str, Any] = {"point": op, "overall": at_threshold(scores, problems, thr),
                                 "per_dataset": {}}
        for ds in DATASETS:
            idx = datasets == ds
            if idx.any():
                entry["per_dataset"][ds] = {
                    **at_threshold(scores[idx], problems[idx], thr),
                    "auc": auc(scores[idx], problems[idx])["value"]}
        out["points"][f"{t}/{c}"] = entry
    return out


def paired(base: np.ndarray, stacked: np.ndarray, problems: np.ndarray, groups: list[str],
           n_boot: int, seed: int = 0) -> dict[str, Any]:
    """Stacked minus support in false alarms and load, each threshold re-set by the bound on
    every resample of whole groups (seeded; the out-of-fold scores held fixed), with the 95%
    percentile interval."""
    by: dict[str, list[int]] = {}
    for k, g in enumerate(groups):
        by.setdefault(g, []).append(k)
    keys = sorted(by)
    rng = np.random.default_rng(seed)
    draws = [np.concatenate([by[keys[g]] for g in rng.integers(0, len(keys), len(keys))])
             for _ in range(n_boot)]

    def diff(idx: np.ndarray, t: float, c: float) -> tuple[float, float]:
        out = []
        for s in (stacked, base):
            thr = threshold_of(operating_point(s[idx], problems[idx], t, c))
            flagged = s[idx] < thr
            out.append((float(flagged[~problems[idx]].mean()), float(flagged.mean())))
        return out[0][0] - out[1][0], out[0][1] - out[1][1]

    result: dict[str, Any] = {}
    for t, c in POINTS:
        value = diff(np.arange(len(base)), t, c)
        boots = np.array([diff(d, t, c) for d in draws])
        result[f"{t}/{c}"] = {
            name: {"value": round(value[j], 4),
                   "ci_low": round(float(np.quantile(boots[:, j], 0.025)), 4),
                   "ci_high": round(float(np.quantile(boots[:, j], 0.975)), 4),
                   "draws": n_boot, "unit": "group", "seed": seed}
            for j, name in enumerate(("false_alarm", "load"))}
    return result


def pct(e: dict[str, Any]) -> str:
    if e.get("value") is None:
        return "-"
    return f"{e['value']:.1%} ({e['ci_low']:.1%}-{e['ci_high']:.1%})"


def table(name: str, m: dict[str, Any]) -> None:
    print(f"== {name}: AUC {m['auc']['value']}, false alarms at exactly 90% recall "
          f"{m['oracle_0.9']['false_alarm']['value']}")
    for key, e in m["points"].items():
        o = e["overall"]
        print(f"  {key}: threshold {e['point']['threshold']}: recall {pct(o['recall'])}, "
              f"false alarms {pct(o['false_alarm'])}, load {pct(o['load'])}")
        for ds, d in e["per_dataset"].items():
            print(f"    {ds}: recall {pct(d['recall'])}, false alarms {pct(d['false_alarm'])},"
                  f" load {pct(d['load'])}, AUC {d['auc']}")


def tuning(args: argparse.Namespace) -> dict[str, Any]:
    db = snapshot(args.db, None)
    data = load(db, args.gold, args.version, args.tuning)
    fit = cv_fit(data.x, data.y, data.fold, lambdas=[args.l2])
    idx = np.arange(len(data.items))
    base = flag_scores(data, idx, fit.pred, fit.probs[:, 0])
    stack = fit_stack(base.tolist(), data.strength.tolist(), data.problems.tolist(),
                      data.fold)
    stacked = np.asarray(stack.out_of_fold)
    p = data.problems
    out = {"n": len(p), "problems": int(p.sum()), "l2": args.l2,
           "weights_on_all": stack.spec.as_dict(), "n_fit": stack.n_fit,
           "support": measure(base, p, data.datasets),
           "stacked": measure(stacked, p, data.datasets),
           "paired": paired(base, stacked, p, [i.group for i in data.items], args.bootstrap)}
    table("support (out of fold)", out["support"])
    table("stacked (out of fold)", out["stacked"])
    print("weights on all:", out["weights_on_all"])
    for key, d in out["paired"].items():
        print(f"stacked - support, {key}: false alarms {d['false_alarm']}, load {d['load']}")
    return out


def fresh(args: argparse.Namespace) -> dict[str, Any]:
    from judge.evaluation.gold import load_gold
    from judge.evaluation.operating import gold_scores
    from judge.review.score import parse_spec
    from judge.store import Store

    packaged = json.loads(args.points.read_text("utf-8"))
    gold = load_gold(args.fresh)
    store = Store.open(snapshot(args.fresh_db, None))
    out: dict[str, Any] = {"file": str(args.fresh), "sha256": gold.sha256,
                           "version": args.fresh_version, "points": {}}
    stacked_spec = parse_spec(packaged["points"][0].get("score"))
    for name, spec, points in (("support", None, packaged.get("support_only_points")
                                or packaged["points"]),
                               ("stacked", stacked_spec, packaged["points"])):
        if name == "support" and stacked_spec is None:
            name = "support (the file's points)"
        elif name == "stacked" and spec is None:
            continue
        data = gold_scores(store, gold, args.fresh_version, spec=spec)
        s, p = np.asarray(data.scores), np.asarray(data.problems)
        ds = np.asarray(data.domains)
        m: dict[str, Any] = {"n": len(s), "problems": int(p.sum()), "auc": auc(s, p),
                             "oracle_0.9": oracle(s, p), "model_calls": 0, "points": {}}
        for t, c in POINTS:
            pt = next(q for q in points if abs(q["target_recall"] - t) < 1e-9
                      and abs(q["confidence"] - c) < 1e-9)
            thr = float(pt["threshold"])
            e: dict[str, Any] = {"point": {"threshold": thr},
                                 "overall": at_threshold(s, p, thr), "per_dataset": {}}
            for d in sorted(set(ds.tolist())):
                i = ds == d
                e["per_dataset"][d] = {**at_threshold(s[i], p[i], thr),
                                       "auc": auc(s[i], p[i])["value"]}
            m["points"][f"{t}/{c}"] = e
        out["points"][name] = m
        table(f"fresh, {name}", m)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "dev_all.db")
    parser.add_argument("--gold", type=Path, nargs="+",
                        default=[ROOT.parent / "gold" / "eval_all.jsonl",
                                 ROOT / "tuning_subset.jsonl"])
    parser.add_argument("--tuning", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--l2", type=float, default=300.0,
                        help="the head's L2 strength (300: the grouped-CV rule's choice)")
    parser.add_argument("--bootstrap", type=int, default=300,
                        help="group resamples of the paired difference")
    parser.add_argument("--fresh", type=Path, help="a held-back gold file, read once")
    parser.add_argument("--fresh-db", type=Path, default=ROOT.parent / "out" / "fresh.db")
    parser.add_argument("--fresh-version", default=None)
    parser.add_argument("--points", type=Path, help="the packaged points file (with --fresh)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.fresh is None and any("fresh_check" in str(g) for g in args.gold):
        parser.error("fresh_check is read only with --fresh")
    report = fresh(args) if args.fresh else tuning(args)
    report.update(command=" ".join(sys.argv),
                  written_at=datetime.now(UTC).isoformat(timespec="seconds"))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2, default=json_default) + "\n", "utf-8")
    return 0


def json_default(v: Any) -> Any:
    """``json.dumps``'s default for the reports: infinities as text, numpy scalars as numbers."""
    if isinstance(v, float) and math.isinf(v):
        return str(v)
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(type(v))


if __name__ == "__main__":
    raise SystemExit(main())
