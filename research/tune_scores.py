"""Fit the ``scores`` strategy's *bias* rule (``label_bias`` and the signal overrides, the
default before the linear rule) on the *tuning* split (never on the check part); kept for the
reports it made (research/reports/tuning_scores_*.json). The linear rule the default uses now
is fitted by :mod:`judge.fitting` (``judge fit``; research/fit_linear.py calls it).

    python research/tune_scores.py --db out/tune/scores.db --version VERSION \
        [--gold research/tuning_subset.jsonl] [--output research/reports/tuning_scores.json]

Reads, for every tuning item, the log-probabilities the judge version stored for its
``choose_label`` call (no model call is made) and the program's signals on the located
evidence, then searches:

* ``label_bias``: one bias per non-``supported`` label on a grid (``supported`` fixed at 0),
  maximising balanced accuracy, ties broken by accuracy, then by the smallest total bias;
* ``signals`` off, or on with ``support_overlap_min`` and ``contradiction_overlap_min`` on
  small grids (judge.assembly.signals rules applied after the scores decision; the other signal
  thresholds stay as configured);
* ``review_support_below``: the smallest grid value whose review queue catches at least
  ``--queue-recall`` of the human-rejected claims.

Every configuration tried is counted in the output (a fit that does not say how many were
tried overstates itself), and (``--cv``) the grouped 10-fold cross-validated balanced
accuracy of the whole search is reported next to the fitted figure (items of one group share
a fold), so the optimism of fitting on 130 items is visible.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))


from judge.assembly.signals import apply_signals
from judge.checks.overlap import evidence_overlap
from judge.config import JudgeConfig  # noqa: E402
from judge.decide.options import log_normalise
from judge.evaluation.gold import load_gold
from judge.evaluation.matching import gold_to_records
from judge.records import AnswerRecord  # noqa: E402
from judge.verdicts import LABELS, Evidence  # noqa: E402


def shown_path(path: Path) -> str:
    """``path`` as a report records it: relative to the repository when inside it, so a
    committed report names no machine's folders."""
    try:
        return str(path.resolve().relative_to(ROOT.parent))
    except ValueError:
        return str(path)


GRID = np.round(np.arange(-3.0, 3.01, 0.5), 2)
QUEUE_GRID = np.round(np.arange(0.0, 0.951, 0.05), 2)
SUPPORT_GRID = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
CONTRADICTION_GRID = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
THRESHOLDS = [(s, c) for s in SUPPORT_GRID for c in CONTRADICTION_GRID]
#: second question (``check_contradiction``): which decided labels it may turn into
#: ``contradicted``, and above which P(yes)
OVERRIDES = (("not_in_source",), ("supported", "not_in_source"),
             ("not_in_source", "not_verifiable"), ("supported", "not_in_source", "not_verifiable"))
YES_GRID = tuple(round(t, 2) for t in np.arange(0.3, 0.951, 0.05))
#: deterministic alternative (``unstated_contradiction_overlap_min``): a decided
#: ``not_in_source`` whose evidence overlap reaches this becomes ``contradicted``
UNSTATED_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)
#: ("question", labels, P(yes) threshold), ("overlap", threshold), or None (neither)
Rule = tuple | None


@dataclass
class Item:
    id: str
    dataset: str
    gold: int
    logprobs: np.ndarray  # 4, normalised over the options
    #: per (support_overlap_min, contradiction_overlap_min): 4 label indexes, what the
    #: signals turn each decided label into
    signal: dict[tuple[float, float], np.ndarray]
    #: P(yes) of the ``check_contradiction`` question, when the run asked it
    contradiction_yes: float | None = None
    #: the claim's lexical overlap with its located evidence (judge.assembly.signals)
    overlap: float = 0.0


def stored_config(db_path: Path, version: str) -> dict:
    """The versioned settings a stored judge version ran with ({} when unknown)."""
    row = sqlite3.connect(db_path).execute(
        "select config from judge_versions where id = ?", (version,)).fetchone()
    return json.loads(row[0]) if row else {}


def load_items(gold_path: Path, db_path: Path, versions: list[str], config: JudgeConfig,
               first: int | None = None) -> list[Item]:
    """Items with the stored answers of ``versions[0]`` (of the first ``first`` gold items
    only, when given); the ``check_contradiction`` answer comes from the first listed version
    that asked it (a run only asks it for the labels it may change, so a second run can fill
    in the rest)."""
    gold = load_gold(gold_path)
    conv = gold_to_records(gold.entries)
    records = {r["id"]: AnswerRecord.model_validate(r) for r in conv.records}
    db = sqlite3.connect(db_path)
    stored = stored_config(db_path, versions[0])
    if stored.get("sentence_questions") or "fill_slot" in stored.get("prompts", {}) or "+" in \
            stored.get("prompts", {}).get("choose_label", "v1"):
        raise SystemExit(f"{versions[0]} asked questions the product no longer asks (per-sentence, "
                         "fill-the-blank or voting prompts); its reports stay in research/reports")
    items = []
    for entry in gold.entries[:first]:
        it = entry.item
        ref = conv.refs.get(it.id)
        if ref is None:
            continue
        rows = [db.execute(
            "select call_ids, evidence from verdicts where claim_id = ? and judge_version = ?",
            (ref.claim_id, version),
        ).fetchone() for version in versions]
        row = rows[0]
        if row is None:
            print(f"warning: no verdict for {it.id} under {versions[0]}", file=sys.stderr)
            continue
        answers, yes = [], None
        for call_id in json.loads(row[0]):
            call = db.execute(
                "select purpose, parsed from calls where id = ? and error is null "
                "and purpose = 'score'", (call_id,),
            ).fetchone()
            if call and call[1]:
                answers.append(json.loads(call[1])["logprobs"])
        if not answers:  # judge_error: stays an error under any rule
            continue
        scores = log_normalise(answers[0])
        normalised = scores
        lp = np.array([normalised[label] for label in LABELS], dtype=float)
        evidence = [Evidence.model_validate(e) for e in json.loads(row[1])]
        record = records[ref.answer_id]
        signal = {}
        for support, contradiction in THRESHOLDS:
            cfg = config.model_copy(update={"support_overlap_min": support,
                                            "contradiction_overlap_min": contradiction})
            signal[(support, contradiction)] = np.array([
                LABELS.index(apply_signals(it.claim, label, evidence, record, cfg)[0])
                for label in LABELS
            ])
        items.append(Item(it.id, it.dataset or "-", LABELS.index(it.label), lp, signal, yes,
                          evidence_overlap(it.claim, evidence, record)))
    return items


def balanced_accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    recalls = [(pred[gold == k] == k).mean() for k in range(4) if (gold == k).any()]
    return float(np.mean(recalls))


def balanced_accuracies(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Balanced accuracy of each row of ``pred`` (rules × items)."""
    recalls = [((pred == k) & (gold == k)).sum(1) / (gold == k).sum()
               for k in range(4) if (gold == k).any()]
    return np.mean(recalls, axis=0)


def predict(items: list[Item], bias: np.ndarray, signals: tuple[float, float] | None,
            contradiction: Rule = None) -> np.ndarray:
    sig = np.stack([i.signal[signals] for i in items]) if signals else None
    return _predict(np.stack([i.logprobs for i in items]), sig, bias, _features(items),
                    contradiction)


def _features(items: list[Item]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([i.contradiction_yes or 0.0 for i in items]),
            np.array([i.overlap for i in items]))


def _predict(lp: np.ndarray, sig: np.ndarray | None, bias: np.ndarray,
             features: tuple[np.ndarray, np.ndarray] | None = None,
             contradiction: Rule = None) -> np.ndarray:
    pred = (lp + bias).argmax(-1)
    pred = _override(pred, features, contradiction)
    return sig[np.arange(pred.shape[-1]), pred] if sig is not None else pred


def _override(decided: np.ndarray, features: tuple[np.ndarray, np.ndarray] | None,
              rule: Rule) -> np.ndarray:
    """Turn decided labels into ``contradicted`` before the signals, as the pipeline does:
    by the second question (a listed label and P(yes) above the threshold) or by the
    deterministic rule (``not_in_source`` on evidence overlapping the claim this much).
    The signals' gate (``contradiction_overlap_min``) still applies afterwards."""
    if rule is None or features is None:
        return decided
    yes, overlap = features
    if rule[0] == "question":
        _, labels, above = rule
        hit = np.isin(decided, [LABELS.index(name) for name in labels]) & (yes > above)
    else:
        hit = (decided == LABELS.index("not_in_source")) & (overlap >= rule[1])
    return np.where(hit, 1, decided)


def support_prob(items: list[Item], bias: np.ndarray) -> np.ndarray:
    scores = np.stack([i.logprobs for i in items]) + bias
    e = np.exp(scores - scores.max(1, keepdims=True))
    return e[:, 0] / e.sum(1)


def rules_for(items: list[Item]) -> list[Rule]:
    """Neither rule; the deterministic rule at every threshold; and, when the items have
    answers to the second question, every (labels, P(yes) threshold) of it."""
    rules: list[Rule] = [None, *(("overlap", m) for m in UNSTATED_GRID)]
    if all(i.contradiction_yes is not None for i in items):
        rules += [("question", labels, t) for labels in OVERRIDES for t in YES_GRID]
    return rules


def search(items: list[Item]) -> tuple[dict, int]:
    """Best (bias, signal thresholds, contradiction rule) by balanced accuracy, then
    accuracy, then the smallest total bias; ``signals`` None means the signals are off.
    Vectorised over the bias grid."""
    gold = np.array([i.gold for i in items])
    lp = np.stack([i.logprobs for i in items])
    features = _features(items)
    biases = np.array([[0.0, *b] for b in itertools.product(GRID, repeat=3)])
    decided = (lp[None, :, :] + biases[:, None, :]).argmax(2)  # biases × items
    size = -np.abs(biases).sum(1)
    best, tried = None, 0
    for signals in (None, *items[0].signal):  # off, then every threshold pair computed
        sig = np.stack([i.signal[signals] for i in items]) if signals else None
        for rule in rules_for(items):
            tried += len(biases)
            pred = _override(decided, features, rule)
            if sig is not None:
                pred = sig[np.arange(len(items))[None, :], pred]
            bal = balanced_accuracies(pred, gold)
            acc = (pred == gold).mean(1)
            k = max(range(len(biases)), key=lambda j: (bal[j], acc[j], size[j]))
            key = (float(bal[k]), float(acc[k]), float(size[k]))
            if best is None or key > best[0]:
                best = (key, biases[k], signals, rule)
    assert best is not None
    return {"bias": best[1], "signals": best[2], "contradiction": best[3],
            "balanced_accuracy": best[0][0], "accuracy": best[0][1]}, tried


def queue_threshold(items: list[Item], bias: np.ndarray, signals: tuple[float, float] | None,
                    recall: float, contradiction: Rule = None) -> dict:
    gold = np.array([i.gold for i in items])
    pred = predict(items, bias, signals, contradiction)
    p_s = support_prob(items, bias)
    rejected = gold != 0
    for t in QUEUE_GRID:
        review = (pred != 0) | (p_s < t)
        got = float(review[rejected].mean())
        if got >= recall:
            return {"review_support_below": float(t), "queue_recall": got,
                    "queue_load": float(review.mean()), "tried": len(QUEUE_GRID)}
    review = (pred != 0) | (p_s < QUEUE_GRID[-1])
    return {"review_support_below": float(QUEUE_GRID[-1]),
            "queue_recall": float(review[rejected].mean()),
            "queue_load": float(review.mean()), "tried": len(QUEUE_GRID)}


def fold_of(item_id: str, folds: int) -> int:
    """Items of one group (``<dataset>:<group>:<local>``: one claim's evidence passages, one
    dialogue) share a fold, so no held-out item has a sibling in the fitting data."""
    parts = item_id.split(":")
    group = ":".join(parts[:2]) if len(parts) >= 3 else item_id
    return int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) % folds


def cross_validated(items: list[Item], folds: int = 10) -> float:
    """Balanced accuracy of the whole search under grouped k-fold cross-validation: each
    item is predicted by a rule fitted without it and without the other items of its group."""
    gold = np.array([i.gold for i in items])
    pred = np.zeros(len(items), dtype=int)
    fold = [fold_of(i.id, folds) for i in items]
    for f in range(folds):
        held = [k for k in range(len(items)) if fold[k] == f]
        if not held:
            continue
        rest = [items[k] for k in range(len(items)) if fold[k] != f]
        fit, _ = search(rest)
        pred[held] = predict([items[k] for k in held], fit["bias"], fit["signals"],
                             fit["contradiction"])
    return balanced_accuracy(pred, gold)


def per_dataset(items: list[Item], pred: np.ndarray) -> dict:
    out = {}
    for ds in sorted({i.dataset for i in items}):
        idx = [k for k, i in enumerate(items) if i.dataset == ds]
        g = np.array([items[k].gold for k in idx])
        out[ds] = {"n": len(idx), "balanced_accuracy": round(balanced_accuracy(pred[idx], g), 3),
                   "accuracy": round(float((pred[idx] == g).mean()), 3)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", required=True, action="append",
                        help="judge version of the scores run; repeat to take answers to the "
                             "contradiction question from further runs")
    parser.add_argument("--gold", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--queue-recall", type=float, default=0.9)
    parser.add_argument("--cv", action="store_true", help="also 10-fold cross-validation")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    config = JudgeConfig.load()
    items = load_items(args.gold, args.db, args.version, config)
    if not items:
        print("no scored tuning items found", file=sys.stderr)
        return 1
    fit, tried = search(items)
    gold = np.array([i.gold for i in items])
    pred = predict(items, fit["bias"], fit["signals"], fit["contradiction"])
    raw = predict(items, np.zeros(4), None)
    queue = queue_threshold(items, fit["bias"], fit["signals"], args.queue_recall,
                            fit["contradiction"])
    rule = fit["contradiction"]
    confusion = [[int(((gold == g) & (pred == p)).sum()) for p in range(4)] for g in range(4)]
    report = {
        "gold": shown_path(args.gold), "version": args.version[0],
        "contradiction_answers_from": args.version if len(args.version) > 1 else None,
        "n": len(items),
        "configurations_tried": tried + queue["tried"],
        "label_bias": {LABELS[k]: float(fit["bias"][k]) for k in range(1, 4)},
        "signals": fit["signals"] is not None,
        "support_overlap_min": fit["signals"][0] if fit["signals"] else None,
        "contradiction_overlap_min": fit["signals"][1] if fit["signals"] else None,
        "contradiction_overrides": list(rule[1]) if rule and rule[0] == "question" else None,
        "contradiction_yes_above": rule[2] if rule and rule[0] == "question" else None,
        "unstated_contradiction_overlap_min": rule[1] if rule and rule[0] == "overlap"
        else None,
        "review_support_below": queue["review_support_below"],
        "tuning_fit": {
            "balanced_accuracy": round(fit["balanced_accuracy"], 3),
            "accuracy": round(fit["accuracy"], 3),
            "raw_argmax_balanced_accuracy": round(balanced_accuracy(raw, gold), 3),
            "recall": {LABELS[k]: round(float((pred[gold == k] == k).mean()), 3)
                       for k in range(4) if (gold == k).any()},
            "queue_recall": round(queue["queue_recall"], 3),
            "queue_load": round(queue["queue_load"], 3),
            "confusion_rows_gold_cols_judge": {"labels": LABELS, "matrix": confusion},
            "per_dataset": per_dataset(items, pred),
        },
    }
    if args.cv:
        report["tuning_fit"]["cross_validated_balanced_accuracy"] = round(
            cross_validated(items), 3)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
