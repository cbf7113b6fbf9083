"""Triage at a stated recall (issue 32), measured on the project's dev gold: the review
queue's operating point out of fold, which non-score flags earn their place, the head's
learning curve, and a simulation of the review loop per dataset.

    python research/triage.py [--db out/dev_all.db] [--gold out/dev_all.jsonl] \
        [--version VERSION] [--output research/reports/triage_tuning.json] \
        [--plot docs/img/triage_learning_curve.svg]

``--db`` is copied first (sqlite's backup API, the source opened read-only) and the copy is
read, so a run that is still filling the store is neither stopped nor written to; items
the version has not judged yet are counted and left out. Every figure is out of fold (10
folds grouped by source document or conversation, :func:`judge.fitting.split.folds_of`)
or on held-out parts; the L2 strength is chosen as :func:`judge.fitting.probe.fit_probe_rule`
chooses it (lowest grouped cross-validated balanced log-loss, ties to the stronger). The
held-back ``fresh_check.jsonl`` is never read here (refused if named).

1. **Operating point out of fold.** Each claim's support score is P(supported) from a head
   fitted without its fold; its *flag score* is ``-inf`` when the queue takes it whatever the
   score (:func:`judge.review.triage.forced` on the stored verdict's program reasons plus
   the label and weak-evidence flags recomputed from the out-of-fold head), else the support
   score. The threshold is :func:`calibration.operating_point.set_operating_point` (exact
   binomial bound) at each target recall x confidence; recall, false alarms (share of
   gold-supported claims flagged) and load with Wilson 95% intervals, overall and per
   dataset (the version-wide threshold, and each dataset's own), beside today's queue (the
   stored ``review`` flag; and today's rule, labels + ``support < review_support_below``,
   out of fold) and the "oracle" threshold that flags exactly 90% of the problems.
2. **Flags that add no recall go.** Rule, stated before the figures: a flag is kept when,
   added to the always-taken set with the threshold re-set to the same guaranteed recall
   (0.9 with 90% confidence), it lowers the false alarms: the upper end of the 95% group
   bootstrap interval of the change is below 0. Deterministic checks, ``judge_error`` and the
   other reasons the queue always takes stay whatever they cost; their cost (removing each
   from the always-taken set) is reported.
3. **Learning curve of the head.** For each size, whole groups are drawn (seeded, repeats)
   from the training folds of each outer fold, a head fitted at the L2 strength the rule
   picks for that size (chosen once per size by the rule's cross-validation on one draw of
   that size), and the held fold predicted: out-of-fold balanced accuracy, contradicted
   recall, and false alarms at the 0.9/0.9 operating point set on those out-of-fold scores.
4. **The review loop, simulated per dataset.** The dataset's groups are split (seeded, ~50/50)
   into a dev pool and a check part; the starting head is fitted on every other dataset (at
   the L2 strength of part 1) and its version-wide threshold set on its out-of-fold scores
   there. Each round reviews ``--round-size`` claims from the pool and refits a domain head
   shrunk toward the starting head (:func:`fit_probe_rule`'s prior fit, its L2 chosen by the
   rule over the reviewed claims' grouped folds: 5 by default, ``--sim-folds 10`` as
   ``judge fit``, twice the time); the threshold is re-set on the reviewed claims'
   out-of-fold flag scores (the starting threshold while they hold too few problems for the
   bound). Two ways to pick the reviews: ``queue`` (as the queue would hand them out: of 40,
   10% the passed claims nearest the threshold, 10% a random sample of the other passed
   ones, the rest a random sample of the flagged ones; the threshold is set with the design
   weights stratum size / sample size of each round) and ``random`` (a simple random sample
   of the pool, unweighted). Measured on the check part, each round: at the stated
   threshold (observed recall, false alarms, load) and at the oracle 90%-recall threshold
   (false alarms, load), balanced accuracy, ROC AUC.
5. The JSON report (every input named; the command; the date) and an SVG plot of part 4.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats as sps
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from calibration.operating_point import (  # noqa: E402
    allowed_misses,
    exact_threshold,
    set_operating_point,
)
from calibration.stats import wilson_bounds  # noqa: E402
from judge.decide import probe_head as probe_head_module  # noqa: E402
from judge.decide.probe_head import ProbeHead  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.items import FitItem, load_items  # noqa: E402
from judge.fitting.logistic import balanced_accuracy, balanced_log_loss  # noqa: E402
from judge.fitting.probe import (  # noqa: E402
    HEAD_LAMBDAS,
    PRIOR_HEAD_LAMBDAS,
    choose_head,
    fit_head,
    head_out_of_fold,
    predict_head,
)
from judge.fitting.split import bucket, folds_of  # noqa: E402
from judge.labels import JUDGE_ERROR  # noqa: E402
from judge.review.queue import claim_reasons  # noqa: E402
from judge.review.score import ScoreSpec  # noqa: E402
from judge.review.triage import ALWAYS, KEPT_FLAGS, forced  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402

DEFAULT_VERSION = "qwen2.5-coder-1.5b-instruct-q4_k_m@2f54a94d6f11"
DATASETS = ("factcheck_gpt", "wice", "begin", "dialfact")
SIM_ORDER = ("dialfact", "factcheck_gpt", "wice", "begin")
TARGETS = (0.8, 0.9, 0.95)
CONFIDENCES = (0.8, 0.9, 0.95)
#: Reasons the judge's head decides: recomputed out of fold, never read from the stored row
#: (the stored verdicts of the tuning items come from a head fitted on them).
MODEL_REASONS = ("label:", "weak_evidence", "doubtful_support")
FORBIDDEN = "fresh_check"
CONTRADICTED = LABELS.index("contradicted")


# -- data ------------------------------------------------------------------------------------


@dataclass
class Data:
    items: list[FitItem]
    x: np.ndarray
    y: np.ndarray
    fold: list[int]
    datasets: np.ndarray
    split: np.ndarray  # "tuning" or "check"
    #: the stored verdict's reasons that the program gives (checks, citations, ...)
    program_reasons: list[list[str]]
    strength: np.ndarray
    stored_review: np.ndarray
    strength_below: float
    support_below: float
    version: str
    about: dict[str, Any]

    @property
    def problems(self) -> np.ndarray:
        return np.asarray(self.y != 0)


def snapshot(db: Path, keep: Path | None) -> Path:
    """A consistent copy of ``db`` (opened read-only) to read instead of it."""
    dest = keep or Path(tempfile.mkdtemp(prefix="triage_")) / "snapshot.db"
    src = sqlite3.connect(f"file:{db.resolve()}?mode=ro", uri=True)
    out = sqlite3.connect(dest)
    try:
        src.backup(out)
    finally:
        out.close()
        src.close()
    return dest


def load(db: Path, gold_paths: Sequence[Path], version: str, tuning: Path) -> Data:
    tuning_ids = {json.loads(line)["id"] for line in tuning.read_text("utf-8").splitlines()
                  if line.strip()}
    store = Store.open(db)
    items: list[FitItem] = []
    about: dict[str, Any] = {"gold": [], "skipped": Counter(), "not_judged": 0}
    config = None
    found_version = version
    for path in gold_paths:
        gold = load_gold(path)
        data = load_items(store, gold, version)
        items += data.items
        config, found_version = data.config, data.version
        about["gold"].append({**data.gold, "file": shown(path), "sha256": gold.sha256})
        about["skipped"].update(data.skipped)
        about["not_judged"] += int(data.gold.get("not_judged", 0))
        about["model_calls"] = about.get("model_calls", 0) + data.model_calls
    assert config is not None
    about["skipped"] = dict(about["skipped"])
    return data_of(items, config, found_version, about, tuning_ids)


def data_of(items: list[FitItem], config: Any, version: str, about: dict[str, Any],
            tuning_ids: set[str]) -> Data:
    """:class:`Data` of fit items already loaded (``config``: the version's judge config)."""
    x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in items])
    y = np.array([i.y for i in items])
    program = [[r for r in claim_reasons(i.row) if not r.startswith(MODEL_REASONS)]
               for i in items]
    return Data(
        items=items, x=x, y=y, fold=folds_of(items),
        datasets=np.array([i.dataset or "-" for i in items]),
        split=np.array(["tuning" if i.gold_id in tuning_ids else "check" for i in items]),
        program_reasons=program,
        strength=np.array([float(i.row.get("strength") or 0.0) for i in items]),
        stored_review=np.array([bool(i.row.get("review")) for i in items]),
        strength_below=float(config.review_strength_below),
        support_below=float(config.review_support_below),
        version=version, about=about)


# -- fitting ----------------------------------------------------------------------------------


@dataclass
class CvFit:
    lam: float
    head: ProbeHead
    pred: np.ndarray
    probs: np.ndarray
    cv_loss: dict[float, float]


def cv_fit(x: np.ndarray, y: np.ndarray, fold: Sequence[int], prior: ProbeHead | None = None,
           lambdas: Sequence[float] | None = None) -> CvFit:
    """:func:`judge.fitting.probe.fit_probe_rule`'s choice of the L2 strength (lowest grouped
    cross-validated balanced log-loss, ties to the stronger), keeping the out-of-fold
    predictions at the chosen strength."""
    if lambdas is None:
        lambdas = PRIOR_HEAD_LAMBDAS if prior is not None else HEAD_LAMBDAS
    lam, head, oof, cv_loss = choose_head(x, y, fold, prior, lambdas)
    forget_heads()
    return CvFit(lam, head, oof[lam][0], oof[lam][1], cv_loss)


def forget_heads() -> None:
    """Drop the heads :func:`judge.decide.probe_head.canonical` remembers by sha256 (every
    fit here is one; thousands would hold hundreds of MB). The heads this script keeps are
    held by reference."""
    probe_head_module._FITTED.clear()


def shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def model_reasons(pred: np.ndarray, support: np.ndarray, strength: np.ndarray,
                  strength_below: float) -> list[list[str]]:
    """The reasons the head decides, from its (out-of-fold) labels: ``label:<label>`` for a
    claim not labelled supported, ``weak_evidence`` for a supported one whose evidence
    strength is below the version's ``review_strength_below``."""
    out = []
    for k, label in enumerate(pred):
        if label != 0:
            out.append([f"label:{LABELS[int(label)]}"])
        elif strength[k] < strength_below:
            out.append(["weak_evidence"])
        else:
            out.append([])
    return out


def flag_scores(data: Data, idx: np.ndarray, pred: np.ndarray, support: np.ndarray,
                always: Callable[[list[str]], bool] | None = None,
                spec: ScoreSpec | None = None) -> np.ndarray:
    """Flag scores of the items ``idx`` given their head's labels and support scores:
    ``-inf`` when the queue takes the claim whatever its score (default
    :func:`judge.review.triage.forced`, with the flags kept there); else the support, or under
    a score ``spec`` the score :func:`judge.review.triage.flag_score` gives (the stored
    strength; none: ``-inf``)."""
    reasons = model_reasons(pred, support, data.strength[idx], data.strength_below)
    out = np.array(support, dtype=float).copy()
    if spec is not None:
        out = np.array([spec.score_row(float(s), data.items[int(k)].row)
                        for s, k in zip(support, idx, strict=True)])
    for j, k in enumerate(idx):
        every = data.program_reasons[int(k)] + reasons[j]
        take = always(every) if always is not None else forced(data.items[int(k)].row["label"],
                                                                every)
        if take:
            out[j] = -math.inf
    return out


# -- measures ---------------------------------------------------------------------------------


def share(flags: np.ndarray) -> dict[str, Any]:
    n = int(len(flags))
    if not n:
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    v = float(np.mean(flags))
    low, high = wilson_bounds(v, n)
    return {"value": round(v, 4), "ci_low": round(low, 4), "ci_high": round(high, 4), "n": n}


def at_threshold(scores: np.ndarray, problems: np.ndarray, threshold: float) -> dict[str, Any]:
    flagged = scores < threshold
    return {"threshold": _num(threshold), "recall": share(flagged[problems]),
            "false_alarm": share(flagged[~problems]), "load": share(flagged)}


def oracle_threshold(scores: np.ndarray, problems: np.ndarray, recall: float = 0.9) -> float:
    """The smallest threshold that flags at least ``recall`` of the problems (observed)."""
    ps = np.sort(scores[problems])
    if not len(ps):
        return math.nan
    m = math.ceil(recall * len(ps) - 1e-9)
    return float(np.nextafter(ps[m - 1], math.inf)) if m else -math.inf


def oracle(scores: np.ndarray, problems: np.ndarray, recall: float = 0.9) -> dict[str, Any]:
    return at_threshold(scores, problems, oracle_threshold(scores, problems, recall))


def auc(support: np.ndarray, problems: np.ndarray) -> dict[str, Any]:
    """ROC AUC of the support score, supported against not supported (Mann-Whitney), with
    the Hanley-McNeil 95% interval."""
    pos, neg = support[~problems], support[problems]
    if not len(pos) or not len(neg):
        return {"value": None, "n_supported": int(len(pos)), "n_problems": int(len(neg))}
    a = float(sps.mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt((a * (1 - a) + (len(pos) - 1) * (q1 - a * a)
                    + (len(neg) - 1) * (q2 - a * a)) / (len(pos) * len(neg)))
    return {"value": round(a, 4), "ci_low": round(max(0.0, a - 1.96 * se), 4),
            "ci_high": round(min(1.0, a + 1.96 * se), 4), "n_supported": int(len(pos)),
            "n_problems": int(len(neg))}


def _num(v: float) -> float | str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    return round(float(v), 6)


def operating_point(scores: np.ndarray, problems: np.ndarray, target: float, confidence: float,
                    weights: np.ndarray | None = None) -> dict[str, Any]:
    """:func:`set_operating_point` as a report entry."""
    op = set_operating_point(scores.tolist(), problems.tolist(), target_recall=target,
                             confidence=confidence,
                             weights=None if weights is None else list(weights))
    out: dict[str, Any] = {
        "target_recall": target, "confidence": confidence, "sufficient": op.sufficient,
        "threshold": _num(op.threshold) if op.sufficient else None, "n": op.n,
        "n_problems": op.n_problems, "n_supported": op.n_supported,
        "gold_misses": op.gold_misses, "miss_bound": _num(op.miss_bound),
        "statement": op.statement(),
    }
    for key in ("gold_recall", "false_alarm", "load"):
        e = getattr(op, key)
        out[key] = {"value": _num(e.value), "ci_low": _num(e.ci_low),
                    "ci_high": _num(e.ci_high), "n": e.n}
    return out


def threshold_of(point: dict[str, Any]) -> float:
    t = point["threshold"]
    return math.nan if t is None else float(t)


def false_alarm_at(scores: np.ndarray, problems: np.ndarray, threshold: float) -> float:
    sup = ~problems
    return float(np.mean(scores[sup] < threshold)) if sup.any() else math.nan


# -- part 1: the operating point out of fold --------------------------------------------------


def queue_figures(flags: np.ndarray, problems: np.ndarray) -> dict[str, Any]:
    return {"recall": share(flags[problems]), "false_alarm": share(flags[~problems]),
            "load": share(flags)}


def part_operating_point(data: Data, fit: CvFit, scores: np.ndarray) -> dict[str, Any]:
    p = data.problems
    support = fit.probs[:, 0]
    points = [operating_point(scores, p, t, c) for t in TARGETS for c in CONFIDENCES]
    main = next(q for q in points if q["target_recall"] == 0.9 and q["confidence"] == 0.9)
    thr = threshold_of(main)
    today_oof = (scores == -math.inf) | (fit.pred != 0) | (support < data.support_below) | \
        np.array(["weak_evidence" in r or "missing_citation" in r for r in
                  [data.program_reasons[k] + m for k, m in enumerate(model_reasons(
                      fit.pred, support, data.strength, data.strength_below))]])
    out: dict[str, Any] = {
        "l2": fit.lam,
        "cv_balanced_log_loss": {str(k): round(v, 4) for k, v in fit.cv_loss.items()},
        "always_taken": int(np.sum(scores == -math.inf)),
        "always_taken_problems": int(np.sum((scores == -math.inf) & p)),
        "points": points,
        "overall": _block(data, np.arange(len(p)), fit, scores, thr, today_oof),
        "per_dataset": {},
    }
    for ds in DATASETS:
        idx = np.flatnonzero(data.datasets == ds)
        if not len(idx):
            continue
        block = _block(data, idx, fit, scores, thr, today_oof)
        block["own_point"] = operating_point(scores[idx], p[idx], 0.9, 0.9)
        out["per_dataset"][ds] = block
    return out


def _block(data: Data, idx: np.ndarray, fit: CvFit, scores: np.ndarray, thr: float,
           today_oof: np.ndarray) -> dict[str, Any]:
    p, s = data.problems[idx], scores[idx]
    y, pred = data.y[idx], fit.pred[idx]
    out: dict[str, Any] = {
        "n": int(len(idx)), "n_problems": int(p.sum()),
        "labels": {LABELS[k]: int((y == k).sum()) for k in range(len(LABELS))},
        "balanced_accuracy": round(balanced_accuracy(pred, y), 4),
        "contradicted_recall": share(pred[y == CONTRADICTED] == CONTRADICTED),
        "roc_auc_support": auc(fit.probs[idx, 0], p),
        "at_version_point_0.9_0.9": at_threshold(s, p, thr) if math.isfinite(thr) else None,
        "oracle_0.9": oracle(s, p),
        "today_rule_out_of_fold": queue_figures(today_oof[idx], p),
        "today_stored": {},
    }
    for part in ("tuning", "check"):
        sel = data.split[idx] == part
        if sel.any():
            out["today_stored"][part] = queue_figures(data.stored_review[idx][sel], p[sel])
            if math.isfinite(thr):
                out.setdefault("at_version_point_by_split", {})[part] = at_threshold(
                    s[sel], p[sel], thr)
    return out


# -- part 2: flags ------------------------------------------------------------------------------


def base_always(reasons: list[str]) -> bool:
    """What the queue takes whatever the score, without the flags under measurement:
    ``judge_error``, failed deterministic checks, and :data:`judge.review.triage.ALWAYS`."""
    return any(r == JUDGE_ERROR or r in ALWAYS or r.startswith("check:") for r in reasons)


def part_flags(data: Data, fit: CvFit, n_boot: int, seed: int) -> dict[str, Any]:
    support = fit.probs[:, 0]
    reasons = [data.program_reasons[k] + m for k, m in enumerate(model_reasons(
        fit.pred, support, data.strength, data.strength_below))]
    names = sorted({r for rs in reasons for r in rs if r != "doubtful_support"})
    has = {f: np.array([f in rs for rs in reasons]) for f in names}
    labels = [f for f in names if f.startswith("label:")]
    if len(labels) > 1:  # today's label rules together
        names.append("label:*")
        has["label:*"] = np.any([has[f] for f in labels], axis=0)
    base = np.array([base_always(rs) for rs in reasons])
    # the always-taken set without one of its own reasons (a claim may have another)
    minus = {f: np.array([base_always([r for r in rs if r != f]) for rs in reasons])
             for f in names if f == JUDGE_ERROR or f in ALWAYS or f.startswith("check:")}
    out: dict[str, Any] = {
        "rule": "a flag is kept when adding it to the always-taken set, with the threshold "
                "re-set to recall >= 0.9 with 90% confidence, lowers the false alarms: the "
                "upper end of the 95% group-bootstrap interval of the change is below 0. "
                "judge_error, failed deterministic checks and the triage module's ALWAYS "
                "reasons stay whatever they cost (their cost: removed from the set). "
                "Decided on the version-wide point; per_dataset repeats it with each "
                "dataset's own point (set on that dataset's claims) for information.",
        "bootstrap": {"resamples": n_boot, "unit": "group", "seed": seed},
        "kept_in_triage_module": sorted(KEPT_FLAGS),
        "note": "P(supported) >= 0.5 implies the head's label is supported, so at a "
                "threshold above 0.5 every label flag is inside the score's flags already",
    }
    out.update(flag_block(data, np.arange(len(data.y)), support, has, base, minus, names,
                          n_boot, seed))
    out["kept"] = sorted(f for f, e in out["flags"].items() if e["kept"] and
                         not e["always_stays"])
    out["dropped"] = sorted(f for f, e in out["flags"].items() if not e["kept"])
    out["per_dataset"] = {}
    for ds in DATASETS:
        idx = np.flatnonzero(data.datasets == ds)
        if len(idx):
            block = flag_block(data, idx, support, has, base, minus, names, n_boot, seed)
            block["kept"] = sorted(f for f, e in block["flags"].items()
                                   if e["kept"] and not e["always_stays"])
            out["per_dataset"][ds] = block
    return out


def flag_block(data: Data, idx: np.ndarray, support_all: np.ndarray,
               has_all: dict[str, np.ndarray], base_all: np.ndarray,
               minus_all: dict[str, np.ndarray], names: Sequence[str], n_boot: int, seed: int
               ) -> dict[str, Any]:
    """Each flag's effect on the 0.9/0.9 point set on the claims ``idx``."""
    p, support, base = data.problems[idx], support_all[idx], base_all[idx]
    has = {f: v[idx] for f, v in has_all.items()}
    groups: dict[str, list[int]] = {}
    for j, k in enumerate(idx):
        groups.setdefault(data.items[int(k)].group, []).append(j)
    keys = sorted(groups)
    rng = np.random.default_rng(seed)
    draws = [np.concatenate([groups[keys[g]] for g in rng.integers(0, len(keys), len(keys))])
             for _ in range(n_boot)]
    base_point = operating_point(np.where(base, -math.inf, support), p, 0.9, 0.9)
    out: dict[str, Any] = {"n": int(len(idx)), "base": {"always_taken": int(base.sum()),
                                                         "point": base_point}, "flags": {}}
    for f in names:
        if not has[f].any():
            continue
        mandatory = f in minus_all
        other = minus_all[f][idx] if mandatory else base | has[f]
        # mandatory: measured as the set without it (other) against with it (base)
        with_f, without_f = (base, other) if mandatory else (other, base)
        s_with = np.where(with_f, -math.inf, support)
        s_without = np.where(without_f, -math.inf, support)
        pw, pwo = operating_point(s_with, p, 0.9, 0.9), operating_point(s_without, p, 0.9, 0.9)
        tw, two = threshold_of(pw), threshold_of(pwo)
        d_fa, d_load = [], []
        for sel in draws:
            a = exact_threshold(s_with[sel], p[sel])
            b = exact_threshold(s_without[sel], p[sel])
            if math.isnan(a) or math.isnan(b):
                continue
            d_fa.append(false_alarm_at(s_with[sel], p[sel], a)
                        - false_alarm_at(s_without[sel], p[sel], b))
            d_load.append(float(np.mean(s_with[sel] < a) - np.mean(s_without[sel] < b)))
        caught_by_score = support < two if math.isfinite(two) else np.zeros(len(p), bool)
        entry: dict[str, Any] = {
            "always_stays": mandatory,
            "n_flagged": int(has[f].sum()),
            "n_flagged_problems": int((has[f] & p).sum()),
            "n_flagged_supported": int((has[f] & ~p).sum()),
            "problems_only_it_catches": int((has[f] & p & ~without_f & ~caught_by_score).sum()),
            "with": {"threshold": pw["threshold"], "false_alarm": pw["false_alarm"],
                     "load": pw["load"], "gold_recall": pw["gold_recall"]},
            "without": {"threshold": pwo["threshold"], "false_alarm": pwo["false_alarm"],
                        "load": pwo["load"], "gold_recall": pwo["gold_recall"]},
        }
        if math.isfinite(tw) and math.isfinite(two):
            entry["false_alarm_change"] = _delta(
                false_alarm_at(s_with, p, tw) - false_alarm_at(s_without, p, two), d_fa)
            entry["load_change"] = _delta(
                float(np.mean(s_with < tw) - np.mean(s_without < two)), d_load)
            hi = entry["false_alarm_change"]["ci_high"]
            entry["kept"] = True if mandatory else bool(hi is not None and hi < 0)
        else:
            entry["kept"] = mandatory
            entry["note"] = "too few problems for the bound: not measured"
        out["flags"][f] = entry
    return out


def _delta(value: float, draws: Sequence[float]) -> dict[str, Any]:
    if not draws:
        return {"value": round(value, 4), "ci_low": None, "ci_high": None, "draws": 0}
    low, high = np.quantile(draws, [0.025, 0.975])
    return {"value": round(value, 4), "ci_low": round(float(low), 4),
            "ci_high": round(float(high), 4), "draws": len(draws)}


# -- part 3: the learning curve ---------------------------------------------------------------


def draw_groups(idx: np.ndarray, data: Data, size: int, index: int, seed: int) -> np.ndarray:
    """Whole groups of ``idx`` in a seeded order until ``size`` claims (as
    :func:`judge.fitting.curve.draw`)."""
    groups: dict[str, list[int]] = {}
    for k in idx:
        groups.setdefault(data.items[int(k)].group, []).append(int(k))
    chosen: list[int] = []
    for g in sorted(groups, key=lambda g: (bucket(f"curve:{index}:{g}", seed), g)):
        if len(chosen) >= size:
            break
        chosen += groups[g]
    return np.array(sorted(chosen))


def drawn_out_of_fold(data: Data, idx: np.ndarray, fold: np.ndarray, size: int, draw: int,
                      seed: int, lam: float, prior: ProbeHead | None = None
                      ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Out-of-fold (labels, probabilities) of the claims ``idx`` (``fold``: their folds), each
    fold's from a head fitted at L2 ``lam`` (shrunk toward ``prior`` when given) on ``size``
    claims of ``idx`` drawn from the other folds (whole groups, draw ``draw``,
    :func:`draw_groups`); and how many claims each fold's head was fitted on."""
    pred = np.zeros(len(idx), dtype=int)
    probs = np.zeros((len(idx), len(LABELS)))
    n_used = []
    forget_heads()
    with threadpool_limits(limits=1, user_api="blas"):
        for f in sorted(set(fold.tolist())):
            held = np.flatnonzero(fold == f)
            sub = draw_groups(idx[fold != f], data, size, draw, seed)
            n_used.append(len(sub))
            head = fit_head(data.x[sub], data.y[sub], lam, prior)
            pred[held], probs[held] = predict_head(data.x[idx[held]], head)
    return pred, probs, n_used


def part_curve(data: Data, fit: CvFit, scores: np.ndarray, sizes: Sequence[int], repeats: int,
               seed: int) -> list[dict[str, Any]]:
    p, y = data.problems, data.y
    fold = np.asarray(data.fold)
    n_train = min(int((fold != f).sum()) for f in set(data.fold))
    out = []
    for size in sizes:
        if size >= n_train:
            continue
        t0 = time.time()
        pick = draw_groups(np.arange(len(y)), data, size, 999, seed)
        lam = cv_fit(data.x[pick], y[pick], folds_of([data.items[k] for k in pick])).lam
        rows = []
        for r in range(repeats):
            pred, probs, n_used = drawn_out_of_fold(data, np.arange(len(y)), fold, size, r,
                                                    seed, lam)
            s = flag_scores(data, np.arange(len(y)), pred, probs[:, 0])
            thr = exact_threshold(s, p)
            rows.append({"n_train": float(np.mean(n_used)),
                         "balanced_accuracy": balanced_accuracy(pred, y),
                         "contradicted_recall": float(np.mean(pred[y == CONTRADICTED]
                                                              == CONTRADICTED))
                         if (y == CONTRADICTED).any() else math.nan,
                         "false_alarm": false_alarm_at(s, p, thr) if math.isfinite(thr)
                         else math.nan,
                         "load": float(np.mean(s < thr)) if math.isfinite(thr) else math.nan,
                         "balanced_log_loss": balanced_log_loss(probs, y)})
        out.append(_curve_point(size, lam, rows, time.time() - t0))
    # every claim the training folds hold: part 1's out-of-fold predictions
    thr = exact_threshold(scores, p)
    out.append(_curve_point("all", fit.lam, [{
        "n_train": float(np.mean([(fold != f).sum() for f in set(data.fold)])),
        "balanced_accuracy": balanced_accuracy(fit.pred, y),
        "contradicted_recall": float(np.mean(fit.pred[y == CONTRADICTED] == CONTRADICTED))
        if (y == CONTRADICTED).any() else math.nan,
        "false_alarm": false_alarm_at(scores, p, thr) if math.isfinite(thr) else math.nan,
        "load": float(np.mean(scores < thr)) if math.isfinite(thr) else math.nan,
        "balanced_log_loss": balanced_log_loss(fit.probs, y)}], 0.0))
    return out


def _curve_point(size: int | str, lam: float, rows: list[dict[str, float]], secs: float
                 ) -> dict[str, Any]:
    point: dict[str, Any] = {"size": size, "l2": lam, "repeats": len(rows),
                             "seconds": round(secs, 1)}
    for key in rows[0]:
        vals = [r[key] for r in rows if not math.isnan(r[key])]
        point[key] = ({"mean": round(float(np.mean(vals)), 4),
                       "min": round(float(np.min(vals)), 4),
                       "max": round(float(np.max(vals)), 4)} if vals else None)
    return point


# -- part 4: the review loop ------------------------------------------------------------------


def pick_queue(scores: np.ndarray, todo: np.ndarray, thr: float, size: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One round's reviews as the queue hands them out (indexes into ``todo``'s positions)
    and their design weights: 10% the passed claims nearest the threshold (census, weight
    1), 10% a random sample of the other passed ones, the rest a random sample of the
    flagged ones (weight = stratum size / sample size)."""
    s = scores[todo]
    flagged = np.flatnonzero(s < thr) if math.isfinite(thr) else np.arange(len(todo))
    passed = np.setdiff1d(np.arange(len(todo)), flagged)
    passed = passed[np.argsort(s[passed], kind="stable")]
    n_near = min(len(passed), math.ceil(0.1 * size))
    near, rest = passed[:n_near], passed[n_near:]
    n_rest = min(len(rest), math.ceil(0.1 * size))
    n_flag = min(len(flagged), size - n_near - n_rest)
    n_rest = min(len(rest), size - n_near - n_flag)
    take_f = rng.choice(flagged, n_flag, replace=False) if n_flag else np.array([], int)
    take_r = rng.choice(rest, n_rest, replace=False) if n_rest else np.array([], int)
    chosen = np.concatenate([take_f, near, take_r]).astype(int)
    weights = np.concatenate([np.full(n_flag, len(flagged) / max(n_flag, 1)),
                              np.ones(n_near), np.full(n_rest, len(rest) / max(n_rest, 1))])
    return chosen, weights, {"flagged": [int(len(flagged)), int(n_flag)],
                             "near_threshold": [int(n_near), int(n_near)],
                             "passed": [int(len(rest)), int(n_rest)]}


def measure_check(data: Data, check: np.ndarray, head: ProbeHead, thr: float,
                  start_thr: float) -> dict[str, Any]:
    pred, probs = predict_head(data.x[check], head)
    s = flag_scores(data, check, pred, probs[:, 0])
    p, y = data.problems[check], data.y[check]
    out: dict[str, Any] = {
        "stated_threshold": _num(thr),
        "at_stated": at_threshold(s, p, thr) if math.isfinite(thr) else None,
        "at_start_threshold": (at_threshold(s, p, start_thr) if math.isfinite(start_thr)
                               else None),
        "oracle_0.9": oracle(s, p),
        "balanced_accuracy": round(balanced_accuracy(pred, y), 4),
        "contradicted_recall": share(pred[y == CONTRADICTED] == CONTRADICTED),
        "roc_auc_support": auc(probs[:, 0], p),
    }
    return out


def simulate(data: Data, ds: str, lam: float, rounds: int, size: int, seed: int,
             arms: Sequence[str], folds: int) -> dict[str, Any]:
    t0 = time.time()
    in_ds = data.datasets == ds
    groups = sorted({data.items[k].group for k in np.flatnonzero(in_ds)})
    side = {g: bucket(f"triage-sim:{g}", seed) % 2 for g in groups}
    pool = np.array([k for k in np.flatnonzero(in_ds) if side[data.items[k].group] == 0])
    check = np.array([k for k in np.flatnonzero(in_ds) if side[data.items[k].group] == 1])
    other = np.flatnonzero(~in_ds)
    out: dict[str, Any] = {"n_pool": int(len(pool)), "n_check": int(len(check)),
                           "n_check_problems": int(data.problems[check].sum()) if len(check)
                           else 0, "n_other": int(len(other)), "start_l2": lam}
    if not len(pool) or not len(check):
        out["note"] = "empty pool or check part"
        return out
    other_items = [data.items[k] for k in other]
    with threadpool_limits(limits=1, user_api="blas"):
        start = fit_head(data.x[other], data.y[other], lam)
        pred_o, probs_o = head_out_of_fold(data.x[other], data.y[other], folds_of(other_items),
                                           lam)
    forget_heads()
    start_point = operating_point(flag_scores(data, other, pred_o, probs_o[:, 0]),
                                  data.problems[other], 0.9, 0.9)
    start_thr = threshold_of(start_point)
    out["start_point"] = start_point
    out["arms"] = {}
    for arm in arms:
        rng = np.random.default_rng(bucket(f"{arm}:{ds}", seed))
        out["arms"][arm] = review_rounds(data, pool, check, start, start_thr, arm, rounds,
                                         size, rng, folds)
    out["seconds"] = round(time.time() - t0, 1)
    return out


FitRound = Callable[[np.ndarray, np.ndarray, Sequence[int], ProbeHead], CvFit]


def review_rounds(data: Data, pool: np.ndarray, check: np.ndarray, start: ProbeHead,
                  start_thr: float, arm: str, rounds: int, size: int,
                  rng: np.random.Generator, folds: int, fit_round: FitRound | None = None,
                  start_from: str = "start (other datasets)") -> list[dict[str, Any]]:
    """One arm of the review loop: ``rounds`` rounds of ``size`` reviews from ``pool``
    (``queue``: :func:`pick_queue`; ``random``: a simple random sample), a domain head
    refitted each round on every reviewed claim shrunk toward ``start`` (``fit_round``,
    default :func:`cv_fit` with the prior), the threshold re-set on the reviewed claims'
    out-of-fold flag scores, and :func:`measure_check` on ``check`` each round."""
    fit_round = fit_round or (lambda x, y, fold, prior: cv_fit(x, y, fold, prior=prior))
    reviewed = np.array([], dtype=int)
    weights = np.array([])
    head, thr = start, start_thr
    curve = [{"round": 0, "reviews": 0, "threshold_from": start_from,
              **measure_check(data, check, head, thr, start_thr)}]
    for r in range(1, rounds + 1):
        todo = np.setdiff1d(pool, reviewed)
        if not len(todo):
            break
        pred_t, probs_t = predict_head(data.x[todo], head)
        s_t = flag_scores(data, todo, pred_t, probs_t[:, 0])
        if arm == "queue":
            chosen, w, design = pick_queue(s_t, np.arange(len(todo)), thr, size, rng)
        else:
            chosen = rng.choice(len(todo), min(size, len(todo)), replace=False)
            w, design = np.ones(len(chosen)), {"random": [int(len(todo)), len(chosen)]}
        reviewed = np.concatenate([reviewed, todo[chosen]])
        weights = np.concatenate([weights, w])
        items = [data.items[k] for k in reviewed]
        fit = fit_round(data.x[reviewed], data.y[reviewed], folds_of(items, folds), start)
        head = fit.head
        s_rev = flag_scores(data, reviewed, fit.pred, fit.probs[:, 0])
        weighted = arm == "queue" and not np.allclose(weights, 1.0)
        point = operating_point(s_rev, data.problems[reviewed], 0.9, 0.9,
                                weights if weighted else None)
        if point["sufficient"]:
            thr, source = threshold_of(point), "reviewed claims (out of fold)"
        else:
            thr, source = start_thr, "start (too few reviewed problems)"
        curve.append({"round": r, "reviews": int(len(reviewed)), "design": design,
                      "l2": fit.lam, "reviewed_problems": int(data.problems[reviewed].sum()),
                      "threshold_from": source, "point_on_reviews": point,
                      **measure_check(data, check, head, thr, start_thr)})
    return curve


# -- the plot (SVG, no plotting library in the venv) ------------------------------------------

COLOURS = {"dialfact": "#1f5fbf", "factcheck_gpt": "#c0392b", "wice": "#27ae60",
           "begin": "#8e44ad"}


Panel = tuple[str, Callable[[dict[str, Any]], float | None]]


def plot_svg(sim: dict[str, Any], path: Path, panels: Sequence[Panel] | None = None,
             marks: Sequence[float] = (0.35, 0.9), colours: dict[str, str] | None = None,
             note: str = "solid: queue order; dashed: random reviews",
             x_title: str = "reviews in the domain") -> None:
    """The curves of ``sim`` (name -> ``{"arms": {arm: [entries with "reviews"]}}``), one
    panel per (title, getter) of ``panels`` (default: issue 32's three), dashed lines at
    ``marks``; the ``random`` arm dashed."""
    colours = COLOURS if colours is None else colours
    panels = panels if panels is not None else [
              ("false alarms at the oracle 90%-recall threshold",
               lambda e: (e.get("oracle_0.9") or {}).get("false_alarm", {}).get("value")),
              ("false alarms at the stated threshold (recall >= 0.9, 90% conf.)",
               lambda e: ((e.get("at_stated") or {}).get("false_alarm") or {}).get("value")),
              ("observed recall on the check part at the stated threshold",
               lambda e: ((e.get("at_stated") or {}).get("recall") or {}).get("value"))]
    width, height, pad = 380, 300, 48
    max_x = max([e["reviews"] for d in sim.values() for c in d.get("arms", {}).values()
                 for e in c] + [40])
    body: list[str] = []
    for i, (title, get) in enumerate(panels):
        ox = i * (width + 20)

        def px(v: float, ox: int = ox) -> float:
            return float(ox + pad + (width - pad - 10) * v / max_x)

        def py(v: float) -> float:
            return height - pad + (-(height - pad - 30)) * v

        body.append(f'<text x="{ox + pad}" y="18" font-size="12">{title}</text>')
        body.append(f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(max_x)}" y2="{py(0)}" '
                    'stroke="#333"/>')
        body.append(f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(0)}" y2="{py(1)}" stroke="#333"/>')
        for v in sorted({0.0, 0.25, 0.5, 0.75, 1.0, *marks}):
            body.append(f'<text x="{px(0) - 6}" y="{py(v) + 4}" font-size="10" '
                        f'text-anchor="end">{v:g}</text>')
            if v in marks:
                body.append(f'<line x1="{px(0)}" y1="{py(v)}" x2="{px(max_x)}" y2="{py(v)}" '
                            'stroke="#999" stroke-dasharray="2,3"/>')
        for v in range(0, max_x + 1, 40):
            body.append(f'<text x="{px(v)}" y="{py(0) + 14}" font-size="10" '
                        f'text-anchor="middle">{v}</text>')
        body.append(f'<text x="{px(max_x / 2)}" y="{height - 12}" font-size="11" '
                    f'text-anchor="middle">{x_title}</text>')
        for ds, d in sim.items():
            for arm, curve in d.get("arms", {}).items():
                pts = [(float(e["reviews"]), float(got)) for e in curve
                       if (got := get(e)) is not None]
                if not pts:
                    continue
                line = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in pts)
                dash = ' stroke-dasharray="5,4"' if arm == "random" else ""
                body.append(f'<polyline points="{line}" fill="none" '
                            f'stroke="{colours.get(ds, "#555")}" stroke-width="2"{dash}/>')
    ly = height + 8
    for j, ds in enumerate(sim):
        body.append(f'<rect x="{pad + j * 150}" y="{ly}" width="14" height="4" '
                    f'fill="{colours.get(ds, "#555")}"/><text x="{pad + j * 150 + 20}" '
                    f'y="{ly + 6}" font-size="11">{ds}</text>')
    body.append(f'<text x="{pad + 4 * 150}" y="{ly + 6}" font-size="11">{note}</text>')
    total_w = len(panels) * (width + 20)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height + 24}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
           + "".join(body) + "</svg>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(svg, encoding="utf-8")


# -- main ---------------------------------------------------------------------------------------


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's figures, read off the parts (out of fold / on the check parts)."""
    out: dict[str, Any] = {}
    op = report["operating_point"]
    main = next(q for q in op["points"] if q["target_recall"] == 0.9 and q["confidence"] == 0.9)
    out["false_alarm_at_0.9_0.9_out_of_fold"] = main["false_alarm"]
    out["false_alarm_at_oracle_0.9_out_of_fold"] = op["overall"]["oracle_0.9"]["false_alarm"]
    out["target_false_alarm"] = 0.45
    for ds, d in (report.get("simulation") or {}).items():
        for arm, curve in d.get("arms", {}).items():
            after = [e for e in curve if e["reviews"] >= 80]
            if after:
                e = after[0]
                out[f"simulation_{ds}_{arm}_after_{e['reviews']}_reviews"] = {
                    "false_alarm_oracle_0.9": e["oracle_0.9"]["false_alarm"],
                    "false_alarm_stated": ((e.get("at_stated") or {}).get("false_alarm")),
                    "recall_stated": ((e.get("at_stated") or {}).get("recall")),
                    "target_false_alarm": 0.35}
    return out


def pct(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        return "n/a"
    v = e["value"]
    if isinstance(v, str):
        return v
    lo, hi = e.get("ci_low"), e.get("ci_high")
    if isinstance(lo, float) and isinstance(hi, float):
        return f"{v:.0%} [{lo:.0%},{hi:.0%}]"
    return f"{v:.0%}"


def summary(report: dict[str, Any]) -> str:
    lines = [f"{report['n']} claims ({report['n_per_dataset']}), version {report['version']}, "
             f"{report['seconds']} s"]
    op = report.get("operating_point")
    if op:
        main = next(q for q in op["points"] if q["target_recall"] == 0.9
                    and q["confidence"] == 0.9)
        lines.append(f"OOF 0.9/0.9: {main['statement']}")
        lines.append("dataset: n | AUC | at version point recall / FA / load | own point thr, "
                     "FA | oracle FA | today (check part) recall / FA")
        for ds, b in [("all", op["overall"]), *op["per_dataset"].items()]:
            at = b["at_version_point_0.9_0.9"] or {}
            own = b.get("own_point") or {}
            today = b["today_stored"].get("check") or {}
            lines.append(
                f"  {ds}: {b['n']} | {(b['roc_auc_support'] or {}).get('value')} | "
                f"{pct(at.get('recall'))} / {pct(at.get('false_alarm'))} / {pct(at.get('load'))}"
                f" | {own.get('threshold')}, {pct(own.get('false_alarm'))} | "
                f"{pct(b['oracle_0.9']['false_alarm'])} | {pct(today.get('recall'))} / "
                f"{pct(today.get('false_alarm'))}")
    fl = report.get("flags")
    if fl:
        lines.append(f"flags kept: {fl['kept'] or 'none'}; dropped: {fl['dropped']}; per "
                     "dataset (own point): " + ", ".join(
                         f"{ds} {b['kept'] or 'none'}" for ds, b in fl["per_dataset"].items()))
        for f, e in fl["flags"].items():
            d = e.get("false_alarm_change") or {}
            lines.append(f"  {f}: n={e['n_flagged']} ({e['n_flagged_problems']} problems), "
                         f"FA change {d.get('value')} [{d.get('ci_low')}, {d.get('ci_high')}]"
                         f"{' (always stays)' if e['always_stays'] else ''}")
    for point in report.get("learning_curve") or []:
        ba, fa = point.get("balanced_accuracy") or {}, point.get("false_alarm") or {}
        cr = point.get("contradicted_recall") or {}
        lines.append(f"curve {point['size']}: BA {ba.get('mean')} contradicted {cr.get('mean')} "
                     f"FA@0.9/0.9 {fa.get('mean')} (l2 {point['l2']})")
    for ds, d in (report.get("simulation") or {}).items():
        for arm, curve in d.get("arms", {}).items():
            row = [f"{e['reviews']}: FA {pct((e['oracle_0.9'] or {}).get('false_alarm'))}"
                   f" / stated {pct((e.get('at_stated') or {}).get('false_alarm'))}"
                   f" rec {pct((e.get('at_stated') or {}).get('recall'))}"
                   f" (thr {e['stated_threshold']}; at start thr FA "
                   f"{pct((e.get('at_start_threshold') or {}).get('false_alarm'))})"
                   for e in curve]
            lines.append(f"sim {ds} {arm} (check n={d['n_check']}): " + "; ".join(row))
    return "\n".join(lines)


def refuse_held_back(parser: argparse.ArgumentParser, paths: Sequence[Path]) -> None:
    """Stop (a usage error) when one of ``paths`` is the held-back check set."""
    for path in paths:
        if FORBIDDEN in str(path):
            parser.error(f"{path}: the held-back check set is read once, by the lead, not here")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=ROOT.parent / "out" / "dev_all.db")
    parser.add_argument("--no-copy", action="store_true",
                        help="read --db itself (only when nothing writes to it)")
    parser.add_argument("--snapshot", type=Path, help="keep the copy of --db here")
    parser.add_argument("--gold", type=Path, nargs="+",
                        default=[ROOT.parent / "out" / "dev_all.jsonl"])
    parser.add_argument("--tuning", type=Path, default=ROOT / "tuning_subset.jsonl",
                        help="the tuning file (its ids mark the tuning split)")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap", type=int, default=300)
    parser.add_argument("--curve-sizes", type=int, nargs="*", default=[100, 200, 400, 800])
    parser.add_argument("--curve-repeats", type=int, default=3)
    parser.add_argument("--sim-datasets", nargs="*", default=list(SIM_ORDER))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sim-folds", type=int, default=5,
                        help="grouped folds of the reviewed claims for each round's L2 choice "
                             "and out-of-fold scores (judge fit uses 10; 5 halves the time)")
    parser.add_argument("--random-datasets", nargs="*", default=["dialfact", "factcheck_gpt"],
                        help="datasets that also get the random-review baseline")
    parser.add_argument("--round-size", type=int, default=40)
    parser.add_argument("--arms", nargs="+", default=["queue", "random"],
                        choices=["queue", "random"])
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["flags", "curve", "simulation"])
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "triage_tuning.json")
    parser.add_argument("--plot", type=Path,
                        default=ROOT.parent / "docs" / "img" / "triage_learning_curve.svg")
    args = parser.parse_args(argv)
    refuse_held_back(parser, [*args.gold, args.tuning])
    t0 = time.time()
    command = "python " + " ".join(shlex.quote(a) for a in
                                   ["research/triage.py", *(sys.argv[1:] if argv is None
                                                            else argv)])
    db = args.db if args.no_copy else snapshot(args.db, args.snapshot)
    try:
        data = load(db, args.gold, args.version, args.tuning)
    finally:
        if not args.no_copy and args.snapshot is None:  # the temporary copy
            shutil.rmtree(db.parent, ignore_errors=True)
    counts = Counter(data.datasets.tolist())
    report: dict[str, Any] = {
        "issue": 32, "command": command,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "db": shown(args.db), "read_from_copy": not args.no_copy, "version": data.version,
        "n": len(data.items), "n_per_dataset": {d: counts[d] for d in DATASETS if counts[d]},
        "n_per_split": dict(Counter(data.split.tolist())),
        "labels": {LABELS[k]: int((data.y == k).sum()) for k in range(len(LABELS))},
        "inputs": data.about, "review_support_below": data.support_below,
        "review_strength_below": data.strength_below, "seed": args.seed,
        "folds": "10, grouped by source (judge.fitting.split.folds_of, seed 0)",
        "allowed_misses_at_0.9_0.9": {str(n): allowed_misses(n, 0.9, 0.9)
                                      for n in (22, 30, 38, 50, 80, 100, 200, 400, 800)},
    }
    print(f"loaded {len(data.items)} claims in {time.time() - t0:.0f} s", file=sys.stderr)
    fit = cv_fit(data.x, data.y, data.fold)
    scores = flag_scores(data, np.arange(len(data.y)), fit.pred, fit.probs[:, 0])
    report["operating_point"] = part_operating_point(data, fit, scores)
    print(f"part 1 done at {time.time() - t0:.0f} s", file=sys.stderr)
    if "flags" not in args.skip:
        report["flags"] = part_flags(data, fit, args.bootstrap, args.seed)
        print(f"part 2 done at {time.time() - t0:.0f} s", file=sys.stderr)
    if "curve" not in args.skip:
        report["learning_curve"] = part_curve(data, fit, scores, args.curve_sizes,
                                              args.curve_repeats, args.seed)
        print(f"part 3 done at {time.time() - t0:.0f} s", file=sys.stderr)
    if "simulation" not in args.skip:
        report["simulation"] = {}
        report["simulation_settings"] = {
            "rounds": args.rounds, "round_size": args.round_size, "arms": args.arms,
            "random_arm_on": args.random_datasets, "folds_per_round": args.sim_folds,
            "split": "groups, ~50/50 by seeded hash: dev pool / check part",
            "start_head": "fitted on the other datasets at part 1's L2 (chosen on all items)",
            "queue_arm": "per round 10% passed nearest the threshold (weight 1), 10% random "
                         "other passed, the rest random flagged; threshold set with the "
                         "design weights (stratum size / sample size of the round)"}
        for ds in args.sim_datasets:
            if counts[ds]:
                arms = [a for a in args.arms if a != "random" or ds in args.random_datasets]
                report["simulation"][ds] = simulate(data, ds, fit.lam, args.rounds,
                                                    args.round_size, args.seed, arms,
                                                    args.sim_folds)
                print(f"simulation {ds} done at {time.time() - t0:.0f} s", file=sys.stderr)
        plot_svg(report["simulation"], args.plot)
        report["plot"] = str(args.plot)
    report["issue_targets"] = targets(report)
    report["seconds"] = round(time.time() - t0, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    print(summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
