"""How far a domain's own reviews can take the queue (issue 32): the false alarms at exactly
90% recall when a dataset's head is fitted on far more of its own reviewed claims than the
simulated loop's 80, out of fold on the dev gold.

    python research/review_ceiling.py [--db out/dev_1500.db] [--version VERSION] \
        [--gold gold/eval_all.jsonl research/tuning_subset.jsonl] \
        [--output research/reports/review_ceiling.json]

The review loop (``research/triage.py``, part 4) refits a domain head after each round of
reviews; after 80 it is measured on the dataset's check part. This script asks what more
reviews would give: for each dataset, each claim's support score comes from a head fitted
without its fold (10 folds grouped by source document or conversation, within the dataset),
on

- ``version-wide``: every other claim of every dataset (the default head's fit, out of fold);
- ``domain only``: the dataset's own claims in the other folds, nothing else;
- ``domain, shrunk``: the same, shrunk toward the head fitted on every other dataset (the
  loop's and ``judge fit --domain``'s prior fit), the L2 strength by the same rule;
- ``shrunk, N reviews`` for each ``--sizes`` N: N of the dataset's claims drawn at random
  (whole groups, seeded, ``--repeats`` draws) from the other folds, shrunk toward the same
  prior, at the L2 strength the rule picks on one draw of that size.

Each claim's flag score is then what the queue reads (``-inf`` when it takes the claim
whatever the score, as :func:`research.triage.flag_scores`), and the figures are the ROC AUC
of support and the false alarms at the threshold that flags exactly 90% of the dataset's
problems (Wilson 95% intervals; a draw's mean and range for the sizes). For the version-wide
scores, each gold label and subtype's median support and the share of its claims at or above
that threshold (passed): which claims the ranking cannot separate. No model call; the
held-back ``fresh_check.jsonl`` is refused.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.decide.probe_head import ProbeHead  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.split import folds_of  # noqa: E402
from research.triage import (  # noqa: E402
    DATASETS,
    CvFit,
    Data,
    auc,
    cv_fit,
    draw_groups,
    drawn_out_of_fold,
    flag_scores,
    load,
    oracle,
    oracle_threshold,
    refuse_held_back,
    shown,
    snapshot,
)

DEFAULT_VERSION = "qwen2.5-coder-1.5b-instruct-q4_k_m@c1a3010d78ac"


def measured(data: Data, idx: np.ndarray, pred: np.ndarray, probs: np.ndarray
             ) -> dict[str, Any]:
    """AUC of support and false alarms at exactly 90% recall of the claims ``idx``."""
    problems = data.problems[idx]
    scores = flag_scores(data, idx, pred, probs[:, 0])
    return {"auc": auc(probs[:, 0], problems),
            "at_90": oracle(scores, problems, 0.9)}


def by_label(data: Data, idx: np.ndarray, support: np.ndarray, kinds: dict[str, str]
             ) -> dict[str, Any]:
    """Per gold label (and subtype): how many, their median support, the share passed at
    the threshold that flags exactly 90% of the problems of ``idx``."""
    thr = oracle_threshold(support, data.problems[idx], 0.9)
    names = np.array([kinds.get(data.items[int(k)].gold_id, data.items[int(k)].label)
                      for k in idx])
    return {name: {"n": int((names == name).sum()),
                   "median_support": round(float(np.median(support[names == name])), 4),
                   "passed": round(float(np.mean(support[names == name] >= thr)), 4)}
            for name in sorted(set(names.tolist()))}


def label_kinds(paths: list[Path]) -> dict[str, str]:
    """``label`` or ``label/subtype`` of each gold item."""
    out = {}
    for path in paths:
        for item in load_gold(path).items:
            out[item.id] = f"{item.label}/{item.subtype}" if item.subtype else item.label
    return out


def within_folds(data: Data, idx: np.ndarray) -> list[int]:
    return folds_of([data.items[int(k)] for k in idx])


def size_arm(data: Data, idx: np.ndarray, fold: np.ndarray, prior: ProbeHead, size: int,
             repeats: int, seed: int) -> dict[str, Any]:
    """Heads shrunk toward ``prior`` from ``size`` of the dataset's claims ``idx`` drawn from
    the other folds (``fold``: theirs); each draw's figures out of fold, then their mean and
    range."""
    pick = draw_groups(idx, data, size, 999, seed)
    lam = cv_fit(data.x[pick], data.y[pick], within_folds(data, pick), prior=prior).lam
    draws = []
    for r in range(repeats):
        pred, probs, _ = drawn_out_of_fold(data, idx, fold, size, r, seed, lam, prior)
        draws.append(measured(data, idx, pred, probs))
    fa = [d["at_90"]["false_alarm"]["value"] for d in draws]
    aucs = [d["auc"]["value"] for d in draws]
    return {"size": size, "l2": lam, "repeats": repeats,
            "false_alarm_at_90": {"mean": round(float(np.mean(fa)), 4),
                                  "min": min(fa), "max": max(fa)},
            "auc": {"mean": round(float(np.mean(aucs)), 4), "min": min(aucs), "max": max(aucs)}}


def dataset_part(data: Data, dataset: str, wide: CvFit, sizes: list[int], repeats: int,
                 seed: int, kinds: dict[str, str]) -> dict[str, Any]:
    idx = np.flatnonzero(data.datasets == dataset)
    fold = within_folds(data, idx)
    other = np.flatnonzero(data.datasets != dataset)
    t0 = time.time()
    out: dict[str, Any] = {"n": int(len(idx)), "problems": int(data.problems[idx].sum()),
                           "version-wide": measured(data, idx, wide.pred[idx], wide.probs[idx])}
    out["version-wide"]["by_label"] = by_label(data, idx, wide.probs[idx, 0], kinds)
    own = cv_fit(data.x[idx], data.y[idx], fold)
    out["domain only"] = {"l2": own.lam, **measured(data, idx, own.pred, own.probs)}
    prior = cv_fit(data.x[other], data.y[other], [data.fold[int(k)] for k in other]).head
    shrunk = cv_fit(data.x[idx], data.y[idx], fold, prior=prior)  # the prior's strengths
    out["domain, shrunk"] = {"l2": shrunk.lam, **measured(data, idx, shrunk.pred, shrunk.probs)}
    out["sizes"] = [size_arm(data, idx, np.asarray(fold), prior, n, repeats, seed)
                    for n in sizes if n < 0.9 * len(idx)]
    out["seconds"] = round(time.time() - t0, 1)
    return out


def summary_line(dataset: str, part: dict[str, Any]) -> str:
    def fa(arm: dict[str, Any]) -> str:
        v = arm["at_90"]["false_alarm"]
        return f"{v['value']:.0%} ({v['ci_low']:.0%}-{v['ci_high']:.0%})"
    sizes = ", ".join(f"{s['size']}: {s['false_alarm_at_90']['mean']:.0%}" for s in part["sizes"])
    return (f"{dataset} ({part['n']}): false alarms at exactly 90% recall: version-wide "
            f"{fa(part['version-wide'])}, domain only {fa(part['domain only'])}, domain shrunk "
            f"{fa(part['domain, shrunk'])}; shrunk on N reviews {sizes}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "dev_1500.db")
    parser.add_argument("--gold", type=Path, nargs="+",
                        default=[ROOT.parent / "gold" / "eval_all.jsonl",
                                 ROOT / "tuning_subset.jsonl"])
    parser.add_argument("--tuning", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--sizes", type=int, nargs="*", default=[80, 160, 320])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "review_ceiling.json")
    args = parser.parse_args(argv)
    refuse_held_back(parser, [*args.gold, args.tuning])
    t0 = time.time()
    db = snapshot(args.db, None)
    try:
        data = load(db, args.gold, args.version, args.tuning)
    finally:
        shutil.rmtree(db.parent, ignore_errors=True)
    print(f"loaded {len(data.items)} claims in {time.time() - t0:.0f} s", file=sys.stderr)
    wide = cv_fit(data.x, data.y, data.fold)
    report: dict[str, Any] = {
        "issue": 32,
        "command": "python " + " ".join(shlex.quote(a) for a in
                                        ["research/review_ceiling.py",
                                         *(sys.argv[1:] if argv is None else argv)]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "db": shown(args.db), "version": data.version, "n": len(data.items),
        "inputs": data.about, "seed": args.seed, "version_wide_l2": wide.lam,
        "folds": "10, grouped by source (judge.fitting.split.folds_of, seed 0), within each "
                 "dataset for the domain arms", "datasets": {}}
    for dataset in args.datasets:
        part = dataset_part(data, dataset, wide, args.sizes, args.repeats, args.seed,
                            label_kinds(args.gold))
        report["datasets"][dataset] = part
        print(summary_line(dataset, part), file=sys.stderr)
    report["seconds"] = round(time.time() - t0, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str) + "\n",
                           "utf-8")
    print(f"wrote {args.output} in {report['seconds']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
