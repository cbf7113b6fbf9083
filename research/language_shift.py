"""How far the probe's hidden states shift with the language read, and what the language
offset of the default head (v5, ``research/language_head.py``) does to its Chinese verdicts
(issue 33), measured on OCNLI's tuning draw only (the check draw is read once, at the end).

    python research/language_shift.py [--pairs-db out/lang.db] [--ocnli-db out/ocnli.db] \
        [--output research/reports/language_shift_tuning.json]

Vectors, all stored (replay: no model call here): ``judge run
research/language_pairs.{zh,en}.jsonl --db out/lang.db`` (the unlabelled pairs of
``research/language_pairs.py``) and ``judge eval-gold research/ocnli_tuning{,.zh-tw}.jsonl --db
out/ocnli.db``, both with head v4's config (``research/configs/probe_first21_context_all.toml``,
``…@42706893ca0c``; the vectors do not depend on the head). Nothing here is fitted on OCNLI's
labels.

Rows per script: ``v4`` and ``v5`` are what the product decides
(``judge.decide.probe.decide_probe`` with each head: v5 subtracts its pinned offset from a
claim the probe reads as Chinese), ``v5_verdicts`` the verdicts v5 stores (the same, after the
pipeline's assembly: abstention check, the program's checks; a verdict without support counts
as flagged); ``research_copy`` subtracts the unrounded offset from every pair with the head v4
(the computation before v5 existed: equal to ``v5`` when every pair reads as Chinese and the
rounding of the pinned offset changes no label); ``diagnostic_ocnli_mean`` takes the offset
from OCNLI's own unlabelled vectors and is never shippable (CC BY-NC), it shows what a perfect
language mean would do.

Figures per row: balanced accuracy over the three labels OCNLI has, their recalls, ROC AUC of
P(supported) (supported against the rest), the mean support of supported and of other pairs,
and the queue at the packaged 0.9 / 90% point (recall of non-supported pairs, false alarms,
load: support below the point's threshold).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats as sps

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge import version_of  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.decide.probe import decide_probe, head_of  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.evaluate import verdicts_for  # noqa: E402
from judge.fitting.items import FitItem, load_items  # noqa: E402
from judge.fitting.logistic import balanced_accuracy  # noqa: E402
from judge.fitting.probe import predict_head  # noqa: E402
from judge.language import read_language  # noqa: E402
from judge.review.triage import packaged_points  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402
from research.language_head import V4_CONFIG, pair_offset, run_vectors  # noqa: E402

OCNLI = {"zh-Hans": ROOT / "ocnli_tuning.jsonl", "zh-Hant": ROOT / "ocnli_tuning.zh-tw.jsonl"}
THREE = [LABELS.index(k) for k in ("supported", "contradicted", "not_in_source")]


def figures(pred: np.ndarray, s: np.ndarray, y: np.ndarray, threshold: float
            ) -> dict[str, Any]:
    """The figures of labels ``pred`` and supports ``s`` against gold ``y`` (label indexes)."""
    sup = y == 0
    auc = float(sps.mannwhitneyu(s[sup], s[~sup]).statistic / (sup.sum() * (~sup).sum()))
    flagged = s < threshold
    keep = np.isin(y, THREE)
    return {
        "n": int(len(y)),
        "balanced_accuracy_3": round(balanced_accuracy(pred[keep], y[keep]), 4),
        "recall": {LABELS[k]: round(float(np.mean(pred[y == k] == k)), 4) for k in THREE},
        "roc_auc_support": round(auc, 4),
        "mean_support": {"supported": round(float(s[sup].mean()), 4),
                         "others": round(float(s[~sup].mean()), 4)},
        "queue": {"recall": round(float(flagged[~sup].mean()), 4),
                  "false_alarm": round(float(flagged[sup].mean()), 4),
                  "load": round(float(flagged.mean()), 4)},
        "labels_given": {LABELS[k]: int((pred == k).sum()) for k in range(len(LABELS))},
    }


def decided(config: JudgeConfig, items: list[FitItem]) -> tuple[np.ndarray, np.ndarray]:
    """(label indexes, supports) as the product decides each stored vector."""
    head = head_of(config)
    labels, support = [], []
    for i in items:
        d = decide_probe(config, head, i.claim, i.located, i.vector, i.call_id)
        assert d.judgement is not None and d.support is not None, d.error
        labels.append(LABELS.index(d.judgement.label))
        support.append(d.support)
    return np.array(labels), np.array(support)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs-db", type=Path, default=ROOT.parent / "out" / "lang.db")
    parser.add_argument("--ocnli-db", type=Path, default=ROOT.parent / "out" / "ocnli.db")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "reports" / "language_shift_tuning.json")
    args = parser.parse_args(argv)
    v4, v5 = JudgeConfig.load(V4_CONFIG), JudgeConfig.load()
    read_by = version_of(v4)
    head = head_of(v4)
    assert v5.probe_head is not None and head_of(v5).shift is not None
    packaged = packaged_points(v5.probe_head.sha256) or {"points": []}
    threshold = next(p["threshold"] for p in packaged["points"]
                     if (p["target_recall"], p["confidence"]) == (0.9, 0.9))
    offset, _ = pair_offset(args.pairs_db)
    unlabelled = run_vectors(args.pairs_db, v4, read_by)
    report: dict[str, Any] = {
        "default_version": version_of(v5), "vectors_from": read_by,
        "threshold_0.9_0.9": threshold,
        "pairs": {k: len(v) for k, v in unlabelled.items()},
        "pairs_read_as_chinese": {k: sum(read_language(t) == "zh" for _, _, t in v)
                                  for k, v in unlabelled.items()},
        "offset_norm": round(float(np.linalg.norm(offset)), 3),
        "offset_norm_in_head_scale": round(float(np.linalg.norm(offset / head.scale)), 3),
        "pinned_offset_max_rounding": round(float(np.abs(
            head_of(v5).shift.offsets["zh"] - offset).max()), 8),  # type: ignore[union-attr]
        "ocnli": {},
    }
    for script, path in OCNLI.items():
        store = Store.open(args.ocnli_db)
        try:
            data = load_items(store, load_gold(path), read_by)
        finally:
            store.close()
        assert data.model_calls == 0
        x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in data.items])
        y = np.array([i.y for i in data.items])
        rows: dict[str, Any] = {
            "read_as_chinese": sum(read_language(i.read) == "zh" for i in data.items)}
        for name, config in (("v4", v4), ("v5", v5)):
            rows[name] = figures(*decided(config, data.items), y, threshold)
        # the verdicts the pipeline stores (assembly after the head: the abstention check,
        # the program's checks), labels and support of v5
        final = verdicts_for(data.items, v5, version_of(v5))
        rows["v5_verdicts"] = figures(
            np.array([LABELS.index(v.label) for v in final]),
            np.array([v.support if v.support is not None else -1.0 for v in final]),
            y, threshold)
        pred, probs = predict_head(x - offset, head)
        rows["research_copy"] = figures(pred, probs[:, 0], y, threshold)
        # diagnostic only: OCNLI's own unlabelled mean against the English pairs' mean
        en = np.vstack([v for _, v, _ in unlabelled["language-en"]])
        pred, probs = predict_head(x - (x.mean(0) - en.mean(0)), head)
        rows["diagnostic_ocnli_mean"] = figures(pred, probs[:, 0], y, threshold)
        report["ocnli"][script] = rows
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    args.output.write_text(text + "\n", encoding="utf-8")
    return 0 if not math.isnan(report["offset_norm"]) else 1


if __name__ == "__main__":
    sys.exit(main())
