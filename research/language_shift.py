"""How far the probe's hidden states shift with the language read, and whether removing a
language-mean offset learnt from *unlabelled* text brings the default head's Chinese verdicts
into line (issue 33), measured on OCNLI's tuning draw only (the check draw is read once, at
the end, with whatever is adopted).

    python research/language_shift.py --pairs-db out/lang.db --ocnli-db out/ocnli.db \
        [--version VERSION] [--output research/reports/language_shift_tuning.json]

Vectors: ``judge run research/language_pairs.{zh,en}.jsonl --db out/lang.db`` (the
unlabelled pairs of ``research/language_pairs.py``, both languages built alike from the
project's own texts) and ``judge eval-gold research/ocnli_tuning{,.zh-tw}.jsonl --db
out/ocnli.db``, both with the default config. The offset is mean(Chinese pairs) - mean(English
pairs); a claim read as Chinese gets ``vector - offset`` before the head. Nothing here is
fitted on OCNLI's labels; the ``diagnostic`` rows (an offset from OCNLI's own unlabelled
vectors) show what a perfect language mean would do and are never shippable (CC BY-NC).

Figures per script: balanced accuracy over the three labels OCNLI has, contradicted recall,
ROC AUC of P(supported) (supported against the rest), the mean support of supported and of
other pairs, and the queue at the packaged 0.9 / 90% point (recall of non-supported pairs,
false alarms, load).
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
from judge.decide.probe import ProbeStrategy, head_of  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.fitting.items import _score_all, claim_of, load_items  # noqa: E402
from judge.fitting.logistic import balanced_accuracy  # noqa: E402
from judge.fitting.probe import predict_head  # noqa: E402
from judge.models.client import ModelClient  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.review.triage import packaged_points  # noqa: E402
from judge.runs.loop import run_sync  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402

OCNLI = {"zh-Hans": ROOT / "ocnli_tuning.jsonl", "zh-Hant": ROOT / "ocnli_tuning.zh-tw.jsonl"}
THREE = [LABELS.index(k) for k in ("supported", "contradicted", "not_in_source")]


def run_vectors(db: Path, config: JudgeConfig, version: str) -> dict[str, np.ndarray]:
    """The stored vectors of every claim ``version`` judged in ``db``, by the answer's domain."""
    store = Store.open(db)
    try:
        client = ModelClient(config, store, replay=True)
        strategy = ProbeStrategy(config, client, prompts_dir())
        pairs, domains = [], []
        for row in store.verdict_rows(judge_version=version):
            record = store.answer_record(row["answer_id"])
            if record is None or row["label"] == "judge_error":
                continue
            pairs.append((record, claim_of(row)))
            domains.append(record.domain or "")
        scored = run_sync(_score_all(strategy, pairs))
    finally:
        store.close()
    out: dict[str, list[np.ndarray]] = {}
    for domain, result in zip(domains, scored, strict=True):
        if result is not None:
            out.setdefault(domain, []).append(np.asarray(result[1], dtype=np.float64))
    return {k: np.vstack(v) for k, v in out.items()}


def figures(x: np.ndarray, y: np.ndarray, head: Any, threshold: float) -> dict[str, Any]:
    pred, probs = predict_head(x, head)
    s = probs[:, 0]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs-db", type=Path, default=ROOT.parent / "out" / "lang.db")
    parser.add_argument("--ocnli-db", type=Path, default=ROOT.parent / "out" / "ocnli.db")
    parser.add_argument("--english-db", type=Path, default=ROOT.parent / "out" / "dev_all.db",
                        help="English dev vectors, for the diagnostic only")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "reports" / "language_shift_tuning.json")
    args = parser.parse_args(argv)
    config = JudgeConfig.load()
    version = version_of(config)
    head = head_of(config)
    assert config.probe_head is not None
    packaged = packaged_points(config.probe_head.sha256) or {"points": []}
    threshold = next(p["threshold"] for p in packaged["points"]
                     if (p["target_recall"], p["confidence"]) == (0.9, 0.9))
    unlabelled = run_vectors(args.pairs_db, config, version)
    zh, en = unlabelled["language-zh"], unlabelled["language-en"]
    offset = zh.mean(0) - en.mean(0)
    report: dict[str, Any] = {
        "version": version, "threshold_0.9_0.9": threshold,
        "pairs": {"zh": len(zh), "en": len(en)},
        "offset_norm": round(float(np.linalg.norm(offset)), 3),
        "offset_norm_in_head_scale": round(float(np.linalg.norm(offset / head.scale)), 3),
        "english_pairs_on_head": {}, "ocnli": {},
    }
    for lang, x in (("zh", zh), ("en", en)):
        _, probs = predict_head(x, head)
        report["english_pairs_on_head"][lang] = round(float(probs[:, 0].mean()), 4)
    for script, path in OCNLI.items():
        store = Store.open(args.ocnli_db)
        try:
            data = load_items(store, load_gold(path), version)
        finally:
            store.close()
        x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in data.items])
        y = np.array([i.y for i in data.items])
        rows = {"default": figures(x, y, head, threshold),
                "minus_pairs_offset": figures(x - offset, y, head, threshold)}
        # diagnostic only: OCNLI's own unlabelled mean against the English pairs' mean
        rows["diagnostic_ocnli_mean"] = figures(x - (x.mean(0) - en.mean(0)), y, head,
                                                threshold)
        report["ocnli"][script] = rows
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    args.output.write_text(text + "\n", encoding="utf-8")
    return 0 if not math.isnan(report["offset_norm"]) else 1


if __name__ == "__main__":
    sys.exit(main())
