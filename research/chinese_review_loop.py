"""A team's own Chinese reviews (issue 33, item 3): the review loop of issue 32 simulated on
OCNLI's *tuning* draw, starting from the default head v5 (its language offset kept) and its
packaged operating point, per script and with the language as one domain.

    python research/chinese_review_loop.py [--db out/ocnli.db] [--seeds 0 1 2 3 4] \
        [--rounds 3] [--output research/reports/chinese_review_loop.json] \
        [--plot docs/img/chinese_review_loop.svg]

The vectors are stored (``judge eval-gold research/ocnli_tuning{,.zh-tw}.jsonl --db
out/ocnli.db`` under head v4's config; they do not depend on the head): 0 model calls. The
check draw (``gold/ocnli_check*``) is read only with ``--read-check CHECK_DB`` (its one read,
logged in research/README.md): then the whole tuning draw is the reviewed pool and the check
draw the read part (judged into CHECK_DB by ``judge eval-gold`` with the default config).

Per seed, OCNLI's premises (the ``<dataset>:<premise>`` part of an id; a pair and its
Traditional copy share one) are split ~50/50 by a seeded hash into a *reviewed pool* and a
*read part*. Three scopes, each a domain a team could declare:

- ``zh-Hans`` / ``zh-Hant``: one script's claims; pool and read part in that script;
- ``zh`` (the language as a domain): every pool premise in one script (seeded: a team's
  answers come in either script, never both), the read part in both scripts.

Each round reviews ``--round-size`` claims of the pool (``queue``: as the queue hands them
out, :func:`research.triage.pick_queue`; ``random``: a simple random sample) and refits the
domain head as ``judge fit --domain`` does (:func:`judge.fitting.probe.fit_probe_rule`: L2
by grouped cross-validated balanced log-loss over the strengths tried with a prior, shrunk
toward the head deciding now, v5; on vectors shifted by v5's offset, which the fitted head
keeps); the threshold is re-set on the reviewed claims' out-of-fold flag scores (0.9 recall,
90% confidence; the packaged point while they hold too few problems). The rounds are
:func:`research.triage.review_rounds`; the figures on the read part
:func:`research.triage.measure_check`: balanced accuracy over OCNLI's three labels,
contradicted recall, ROC AUC of support, false alarms and load at exactly 90% recall (the
ranking) and at the stated threshold (with its observed recall). Across seeds: mean, min, max.

The fits run on the shifted vectors with v5's weights as the prior (the offset applied once);
that this is the fit of ``judge fit`` (raw vectors, the shift and the texts read) is checked
on the first ``--round-size`` pool claims of the first seed and scope (the same L2, the same
probabilities on every claim).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge import version_of  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.decide.probe import head_of  # noqa: E402
from judge.decide.probe_head import ProbeHead  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.items import FitItem, load_items  # noqa: E402
from judge.fitting.probe import fit_probe_rule, predict_head  # noqa: E402
from judge.fitting.split import bucket, folds_of  # noqa: E402
from judge.review.triage import packaged_points  # noqa: E402
from judge.store import Store  # noqa: E402
from research.language_head import V4_CONFIG  # noqa: E402
from research.language_shift import OCNLI  # noqa: E402
from research.triage import (  # noqa: E402
    CvFit,
    Data,
    Panel,
    data_of,
    forget_heads,
    plot_svg,
    review_rounds,
    shown,
)

SCOPES = ("zh-Hans", "zh-Hant", "zh")
DATASET = {"zh-Hans": "ocnli", "zh-Hant": "ocnli_tw"}
COLOURS = {"zh-Hans": "#c0392b", "zh-Hant": "#1f5fbf", "zh": "#27ae60"}
FORBIDDEN = "ocnli_check"
#: the check draw, read once with --read-check (never the tuning loop's read part)
CHECK = {"zh-Hans": ROOT.parent / "gold" / "ocnli_check.jsonl",
         "zh-Hant": ROOT.parent / "gold" / "ocnli_check.zh-tw.jsonl"}
#: the figures summarised across seeds, each a getter on a round's entry
FIGURES: dict[str, Any] = {
    "balanced_accuracy": lambda e: e.get("balanced_accuracy"),
    "contradicted_recall": lambda e: (e.get("contradicted_recall") or {}).get("value"),
    "roc_auc_support": lambda e: (e.get("roc_auc_support") or {}).get("value"),
    "false_alarm_at_90_recall": lambda e: ((e.get("oracle_0.9") or {}).get("false_alarm")
                                           or {}).get("value"),
    "load_at_90_recall": lambda e: ((e.get("oracle_0.9") or {}).get("load") or {}).get("value"),
    "stated_recall": lambda e: ((e.get("at_stated") or {}).get("recall") or {}).get("value"),
    "stated_false_alarm": lambda e: ((e.get("at_stated") or {}).get("false_alarm")
                                     or {}).get("value"),
    "stated_load": lambda e: ((e.get("at_stated") or {}).get("load") or {}).get("value"),
}
TARGET_BA, TARGET_REVIEWS = 0.60, 80


def premise(item: FitItem) -> str:
    """The premise of an OCNLI item (``ocnli:gov_1260:1`` and ``ocnli_tw:gov_1260:1``: one)."""
    return "premise:" + item.gold_id.removeprefix("check:").split(":")[1]


def _items(db: Path, files: list[Path], read_by: str, about: dict[str, Any]
           ) -> list[FitItem]:
    items: list[FitItem] = []
    store = Store.open(db)
    try:
        for path in files:
            gold = load_gold(path)
            data = load_items(store, gold, read_by)
            about["gold"].append({**data.gold, "file": shown(path), "sha256": gold.sha256,
                                  "vectors_from": read_by})
            about["model_calls"] += data.model_calls
            items += [replace(i, group=premise(i)) for i in data.items]
    finally:
        store.close()
    return items


def load(db: Path, check_db: Path | None = None
         ) -> tuple[Data, np.ndarray, ProbeHead, ProbeHead, float, dict[str, Any]]:
    """Both scripts' tuning items (grouped by premise across scripts) with the vectors shifted
    by v5's offset, the raw vectors, v5's head, the same head without the offset (for shifted
    vectors), the packaged 0.9 / 90% threshold, and what was read. ``check_db``: the check
    draw's items follow (judged by the default config; their ids start ``check:``)."""
    v4, v5 = JudgeConfig.load(V4_CONFIG), JudgeConfig.load()
    read_by = version_of(v4)
    head = head_of(v5)
    assert head.shift is not None and v5.probe_head is not None
    about: dict[str, Any] = {"gold": [], "vectors_from": read_by, "model_calls": 0}
    items = _items(db, list(OCNLI.values()), read_by, about)
    if check_db is not None:
        checked = _items(check_db, list(CHECK.values()), version_of(v5), about)
        items += [replace(i, gold_id="check:" + i.gold_id) for i in checked]
    assert about["model_calls"] == 0
    data = data_of(items, v5, version_of(v5), about, set())
    texts = [i.read for i in items]
    raw = data.x
    data.x = head.shift.apply(raw, texts)
    plain = ProbeHead(head.labels, head.mean, head.scale, head.coef, head.intercept,
                      dict(head.about))
    same = np.allclose(head.probabilities(raw, texts), plain.probabilities(data.x))
    assert same, "v5 on raw vectors and texts differs from v5's weights on shifted vectors"
    packaged = packaged_points(v5.probe_head.sha256) or {"points": []}
    threshold = next(float(p["threshold"]) for p in packaged["points"]
                     if (p["target_recall"], p["confidence"]) == (0.9, 0.9))
    about["read_as_chinese"] = int(sum(head.shift.language(t) == "zh" for t in texts))
    return data, raw, head, plain, threshold, about


def fit_round(x: np.ndarray, y: np.ndarray, fold: Any, prior: ProbeHead) -> CvFit:
    """A round's domain head: :func:`fit_probe_rule` shrunk toward ``prior``, as ``judge fit
    --domain`` fits it (on vectors already shifted)."""
    fitted = fit_probe_rule(x, y, fold, prior=prior)
    assert isinstance(fitted.model, ProbeHead) and fitted.out_of_fold is not None
    forget_heads()
    return CvFit(fitted.l2, fitted.model, fitted.out_of_fold[0], fitted.out_of_fold[1],
                 fitted.cv_balanced_log_loss)


def check_judge_fit(data: Data, head: ProbeHead, raw: np.ndarray, idx: np.ndarray,
                    folds: int) -> dict[str, Any]:
    """``judge fit``'s way (raw vectors, v5's shift and the texts read) against this script's
    (shifted vectors, v5's weights as the prior) on the claims ``idx``: the same head."""
    items = [data.items[k] for k in idx]
    fold = folds_of(items, folds)
    texts = [i.read for i in items]
    a = fit_probe_rule(raw[idx], data.y[idx], fold, prior=head, shift=head.shift, texts=texts)
    plain = ProbeHead(head.labels, head.mean, head.scale, head.coef, head.intercept)
    b = fit_probe_rule(data.x[idx], data.y[idx], fold, prior=plain)
    assert isinstance(a.model, ProbeHead) and isinstance(b.model, ProbeHead)
    forget_heads()
    pa = predict_head(raw, a.model, [i.read for i in data.items])[1]
    pb = predict_head(data.x, b.model)[1]
    out = {"n": int(len(idx)), "l2": [a.l2, b.l2],
           "max_weight_difference": float(np.abs(a.model.coef - b.model.coef).max()),
           "max_probability_difference": float(np.abs(pa - pb).max())}
    assert a.l2 == b.l2 and out["max_probability_difference"] < 1e-9, out
    return out


def split(data: Data, scope: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool, read part) of ``scope`` for ``seed``: premises ~50/50 by a seeded hash; with
    the check draw loaded, the whole tuning draw is the pool and the check draw the read
    part."""
    prem = [i.group for i in data.items]
    checked = np.array([i.gold_id.startswith("check:") for i in data.items])
    pool_side = (~checked if checked.any()
                 else np.array([bucket(f"zh-loop:{g}", seed) % 2 == 0 for g in prem]))
    if scope in DATASET:
        mine = data.datasets == DATASET[scope]
        return np.flatnonzero(mine & pool_side), np.flatnonzero(mine & ~pool_side)
    script = np.array([DATASET["zh-Hans" if bucket(f"zh-script:{g}", seed) % 2 == 0
                               else "zh-Hant"] for g in prem])
    return (np.flatnonzero(pool_side & (data.datasets == script)),
            np.flatnonzero(~pool_side))


def summarise(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per round: each figure's mean, min and max over the seeds' curves."""
    out = []
    for r in range(min(len(c) for c in runs)):
        entries = [c[r] for c in runs]
        row: dict[str, Any] = {"round": r, "reviews": entries[0]["reviews"],
                               "seeds": len(entries)}
        for name, get in FIGURES.items():
            vals = [float(v) for e in entries if (v := get(e)) is not None]
            row[name] = ({"mean": round(float(np.mean(vals)), 4),
                          "min": round(float(np.min(vals)), 4),
                          "max": round(float(np.max(vals)), 4)} if vals else None)
        out.append(row)
    return out


def target_check(summary: dict[str, Any], runs: dict[str, Any]) -> dict[str, Any]:
    """The issue's target read on the tuning draw: balanced accuracy >= 0.60 after 80
    reviews (mean over seeds, and how many seeds reach it)."""
    out: dict[str, Any] = {"target_balanced_accuracy": TARGET_BA, "after_reviews": TARGET_REVIEWS}
    for scope, arms in summary.items():
        for arm, rows in arms.items():
            row = next((e for e in rows if e["reviews"] >= TARGET_REVIEWS), None)
            if row is None:
                continue
            k = rows.index(row)
            ba = [c[k]["balanced_accuracy"] for c in runs[scope][arm]]
            out[f"{scope}/{arm}"] = {
                "reviews": row["reviews"], "balanced_accuracy": row["balanced_accuracy"],
                "start": rows[0]["balanced_accuracy"],
                "seeds_reaching": f"{sum(v >= TARGET_BA for v in ba)} of {len(ba)}",
                "reached_on_mean": bool(row["balanced_accuracy"]["mean"] >= TARGET_BA)}
    return out


def panels() -> list[Panel]:
    def mean(name: str) -> Any:
        return lambda e: (e.get(name) or {}).get("mean")
    return [("balanced accuracy (3 labels) on the read part", mean("balanced_accuracy")),
            ("contradicted recall on the read part", mean("contradicted_recall")),
            ("false alarms at exactly 90% recall", mean("false_alarm_at_90_recall"))]


def table(summary: dict[str, Any]) -> str:
    """The README's table: per scope and arm, each round's means (min-max)."""
    def cell(e: dict[str, Any] | None) -> str:
        if not e:
            return "n/a"
        return f"{e['mean']:.1%} ({e['min']:.0%}–{e['max']:.0%})"

    lines = ["| scope / reviews | balanced accuracy | contradicted recall | false alarms / load at "
             "90% recall | at the stated point: recall / false alarms |",
             "|---|---:|---:|---:|---:|"]
    for scope, arms in summary.items():
        for arm, rows in arms.items():
            for e in rows:
                fa, ld = e["false_alarm_at_90_recall"], e["load_at_90_recall"]
                sr, sf = e["stated_recall"], e["stated_false_alarm"]
                lines.append(
                    f"| {scope} {arm} {e['reviews']} | {cell(e['balanced_accuracy'])} | "
                    f"{cell(e['contradicted_recall'])} | "
                    f"{fa['mean']:.0%} / {ld['mean']:.0%} | "
                    f"{(sr or {}).get('mean', 0):.0%} / {(sf or {}).get('mean', 0):.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "ocnli.db")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--round-size", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5,
                        help="grouped folds of the reviewed claims for each round's L2 choice "
                             "and out-of-fold scores (judge fit uses 10; 5 halves the time)")
    parser.add_argument("--scopes", nargs="+", default=list(SCOPES), choices=SCOPES)
    parser.add_argument("--arms", nargs="+", default=["queue", "random"],
                        choices=["queue", "random"])
    parser.add_argument("--read-check", type=Path, metavar="CHECK_DB",
                        help="the one read of the check draw: review the whole tuning draw, "
                             "read the check draw (judged into CHECK_DB by the default config)")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "reports" / "chinese_review_loop.json")
    parser.add_argument("--plot", type=Path,
                        default=ROOT.parent / "docs" / "img" / "chinese_review_loop.svg")
    args = parser.parse_args(argv)
    if FORBIDDEN in str(args.db):
        parser.error(f"{args.db}: the check draw is read once, at the end, not here")
    t0 = time.time()
    command = "python " + " ".join(shlex.quote(a) for a in [
        "research/chinese_review_loop.py", *(sys.argv[1:] if argv is None else argv)])
    data, raw, head, plain, threshold, about = load(args.db, args.read_check)
    first_pool = split(data, args.scopes[0], args.seeds[0])[0]
    equivalence = check_judge_fit(data, head, raw, first_pool[:args.round_size], args.folds)
    print(f"judge fit's way and this script's: {equivalence}", file=sys.stderr)
    report: dict[str, Any] = {
        "issue": 33, "command": command, "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "db": shown(args.db), "default_version": data.version, "inputs": about,
        "n": len(data.items), "start": {"head": "v5 (default), its language offset kept",
                                        "threshold_0.9_0.9": threshold},
        "read": "the check draw (read once)" if args.read_check else "the tuning draw",
        "settings": {"seeds": args.seeds, "rounds": args.rounds, "round_size": args.round_size,
                     "folds_per_round": args.folds, "arms": args.arms,
                     "split": "premises ~50/50 by seeded hash (zh-loop:<premise>): pool / "
                              "read part; scope zh: each pool premise in one script "
                              "(zh-script:<premise>), the read part in both"},
        "judge_fit_equivalence": equivalence, "runs": {}, "summary": {},
    }
    runs: dict[str, dict[str, list[list[dict[str, Any]]]]] = {}
    for seed in args.seeds:
        for scope in args.scopes:
            pool, read = split(data, scope, seed)
            for arm in args.arms:
                rng = np.random.default_rng(bucket(f"{arm}:{scope}", seed))
                curve = review_rounds(data, pool, read, plain, threshold, arm, args.rounds,
                                      args.round_size, rng, args.folds, fit_round,
                                      start_from="the default head v5, its packaged point")
                for e in curve:
                    e["n_pool"], e["n_read"] = int(len(pool)), int(len(read))
                runs.setdefault(scope, {}).setdefault(arm, []).append(curve)
                print(f"seed {seed} {scope} {arm}: BA " + ", ".join(
                    f"{e['reviews']}:{e['balanced_accuracy']:.3f}" for e in curve)
                    + f" ({time.time() - t0:.0f} s)", file=sys.stderr)
    report["runs"] = runs
    report["summary"] = {s: {a: summarise(c) for a, c in arms.items()} for s, arms in runs.items()}
    report["issue_target"] = target_check(report["summary"], runs)
    report["seconds"] = round(time.time() - t0, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    plot_svg({s: {"arms": arms} for s, arms in report["summary"].items()}, args.plot,
             panels(), marks=(0.4, 0.6, 0.9), colours=COLOURS,
             note="solid: queue order; dashed: random; means over seeds",
             x_title="Chinese reviews")
    print(table(report["summary"]))
    print(json.dumps(report["issue_target"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
