"""``judge fit`` on the project's own data (issue 18), from a store holding the embedded
default's stored calls on the check items (gold/eval_xl.jsonl) and the tuning items
(research/tuning_subset.jsonl); no model call.

    python research/fit_per_domain.py --db /work/fitdata/eval.db \
        [--output research/reports/fit_per_domain.json] [--skip-reproduction]

1. **Reproduction**: the committed default (judge/config/profiles/embedded.toml) was fitted by
   research/fit_linear.py on the first 244 tuning items with the core and text features; the
   same fit by ``judge fit --holdout 0`` (the default's own features, the same L2 grid and
   folds) from the stored calls, compared weight by weight with the committed rule, and, when
   they differ, the drift report of the refitted rule against the default on the check claims.
2. **Per dataset**: for each external dataset, the rule of that domain fitted on its tuning
   items only (``judge fit --domain D --check-gold gold/eval_xl.jsonl --curve``), measured on
   its check items against the default on the same items; a dataset short of the minimum gold
   is reported with ``judge fit``'s refusal, and with the same fit made without the minimum
   (research only, marked ``below_minimum_research_fit``; never in the combined config).
3. **Together**: the default config plus every domain rule the adoption rule accepts judges the
   358 check items with ``judge eval-gold`` (zero model calls: asserted, and replay is forced
   so a missing call fails instead of calling the model); per-dataset figures from that run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.api import eval_gold  # noqa: E402
from judge.config import EMBEDDED_PROFILE, JudgeConfig  # noqa: E402
from judge.config.score_model import DomainRule, ScoreModel  # noqa: E402
from judge.evaluation.calibrate import resolve_version  # noqa: E402
from judge.evaluation.gold import GoldFile, load_gold  # noqa: E402
from judge.fitting import FitRefused  # noqa: E402
from judge.fitting.evaluate import drift_summary, verdicts_for  # noqa: E402
from judge.fitting.items import load_items  # noqa: E402
from judge.fitting.run import FitResult, fit_and_measure, fit_store, version_of  # noqa: E402
from judge.fitting.toml import config_toml  # noqa: E402
from judge.store import Store  # noqa: E402

DATASETS = ("begin", "dialfact", "factcheck_gpt", "wice")
FIRST = 244  # the tuning items the committed default was fitted on


def _first(gold: GoldFile, n: int) -> GoldFile:
    return GoldFile(path=Path(f"{gold.path} (first {n})"), sha256=gold.sha256,
                    entries=gold.entries[:n], lines=n)


def reproduction(store: Store, version: str, tuning: GoldFile, check: GoldFile
                 ) -> dict[str, Any]:
    started = time.perf_counter()
    result = fit_store(store, _first(tuning, FIRST), judge_version=version, holdout=0)
    seconds = time.perf_counter() - started
    committed = ScoreModel.model_validate(EMBEDDED_PROFILE["score_model"])
    fitted = result.fitted.model
    diffs = [abs(fitted.weights[label][name] - w)
             for label, row in committed.weights.items() for name, w in row.items()]
    diffs += [abs(fitted.intercept[label] - v) for label, v in committed.intercept.items()]
    same_rule = fitted == committed
    same_threshold = result.fitted.review_support_below == EMBEDDED_PROFILE[
        "review_support_below"]
    recorded = json.loads((ROOT / "reports" / "tuning_linear_v1_t244_text.json").read_text())
    cv_loss = {str(k): round(v, 4) for k, v in result.fitted.cv_balanced_log_loss.items()}
    out: dict[str, Any] = {
        "command": f"judge fit --db DB --gold FIRST_{FIRST}.jsonl --judge-version {version} "
                   "--holdout 0 --output reproduced.toml",
        "n": result.fitted.n, "skipped": result.skipped, "l2": result.fitted.l2,
        "features": list(result.fitted.features),
        "review_support_below": result.fitted.review_support_below,
        "identical_rule": same_rule, "identical_threshold": same_threshold,
        "max_abs_weight_difference": round(max(diffs), 6),
        # the grouped CV of the recorded fit (research/reports/tuning_linear_v1_t244_text.json)
        "cross_validated_balanced_log_loss_as_recorded":
            cv_loss == recorded["cross_validated_balanced_log_loss"],
        "candidate_version": result.candidate_version, "baseline_version": version,
        "model_calls": result.model_calls, "seconds": round(seconds, 1),
    }
    if not (same_rule and same_threshold):
        items = load_items(store, check, version).items
        base = verdicts_for(items, result.baseline, version)
        cand = verdicts_for(items, result.candidate, result.candidate_version)
        out["check_drift"] = drift_summary(items, base, cand, version, result.candidate_version)
    return out


def _summary(result: FitResult, dataset: str, seconds: float) -> dict[str, Any]:
    data = result.to_dict()
    h = data["holdout"]
    return {
        "seconds": round(seconds, 1),
        "fit": {k: data["fit"][k] for k in ("n", "labels", "l2", "review_support_below",
                                            "shrunk_toward_current",
                                            "queue_recall_out_of_fold",
                                            "queue_load_out_of_fold")},
        "check": h, "drift": {k: v for k, v in data["drift"].items() if k != "flipped"},
        "balanced_accuracy_change_points": round(
            100 * (h["balanced_accuracy"]["candidate"]["value"]
                   - h["balanced_accuracy"]["baseline"]["value"]), 1),
        "checks": data["checks"], "recommend_adopt": data["recommend_adopt"],
        "reasons": data["reasons"], "curve": data["curve"], "model_calls": data["model_calls"],
    }


def per_dataset(store: Store, version: str, tuning: GoldFile, check: GoldFile
                ) -> tuple[dict[str, Any], dict[str, DomainRule]]:
    """Each dataset's rule through ``judge fit`` (a domain's fit shrinks toward the current
    rule by default), and beside it the same fit shrunk toward 0 (``--shrink zero``); when
    ``judge fit`` refuses (too little gold), the refusal, and the same fits made without the
    minimum (research only: judge.fitting.run.fit_and_measure, which judge fit calls after
    its checks)."""
    out: dict[str, Any] = {}
    rules: dict[str, DomainRule] = {}
    for dataset in DATASETS:
        command = (f"judge fit --db DB --gold research/tuning_subset.jsonl --domain {dataset} "
                   "--check-gold gold/eval_xl.jsonl --curve --json --output X.toml")
        started = time.perf_counter()
        try:
            result = fit_store(store, tuning, judge_version=version, domain=dataset,
                               check_gold=check, curve=True)
            zero = fit_store(store, tuning, judge_version=version, domain=dataset,
                             check_gold=check, toward_current=False)
        except FitRefused as exc:
            held = load_items(store, check, version, domain=dataset)
            data = load_items(store, tuning, version, domain=dataset,
                              exclude_claims={i.claim.id for i in held.items})
            result = fit_and_measure(data, data.items, held.items, domain=dataset,
                                     curve=True, source="check gold", toward_current=True)
            zero = fit_and_measure(data, data.items, held.items, domain=dataset,
                                   source="check gold", toward_current=False)
            out[dataset] = {"command": command, "refused": str(exc),
                            "below_minimum_research_fit": {
                                **_summary(result, dataset, time.perf_counter() - started),
                                "shrink_zero": _summary(zero, dataset, 0.0)}}
            continue
        out[dataset] = {"command": command,
                        **_summary(result, dataset, time.perf_counter() - started),
                        "shrink_zero": _summary(zero, dataset, 0.0)}
        if result.recommend_adopt:  # what a team following the adoption rule would run
            rules[dataset] = result.candidate.domain_rules[dataset]
    return out, rules


def combined(store: Store, version: str, check_path: Path, rules: dict[str, DomainRule]
             ) -> dict[str, Any]:
    base = JudgeConfig.load(None, **store.judge_version_row(version)["config"])
    config = base.model_copy(update={"domain_rules": rules})
    config = JudgeConfig.model_validate(config.model_dump())
    import judge.runs.batch as batch

    build = batch.build_pipeline  # replaying: a missing call fails instead of calling a model
    batch.build_pipeline = lambda cfg, db, replay=False, **kw: build(cfg, db, replay=True, **kw)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "domains.toml"
            path.write_text(config_toml(config), encoding="utf-8")
            result = eval_gold(check_path, config=path, db=store)
    finally:
        batch.build_pipeline = build
    data = result.to_dict()
    assert result.summary.model_calls == 0, "the fitted config needed model calls"
    return {
        "command": "judge eval-gold gold/eval_xl.jsonl --db DB -c CONFIG.toml",
        "domain_rules": sorted(rules),
        "judge_version": result.summary.judge_version, "expected": version_of(config),
        "model_calls": result.summary.model_calls,
        "overall": {k: data[k] for k in ("n", "balanced_accuracy", "balanced_accuracy_ci",
                                         "queue_recall", "queue_load")},
        "per_dataset": {name: {k: f[k] for k in ("n", "balanced_accuracy",
                                                 "balanced_accuracy_ci", "queue_recall",
                                                 "queue_load", "queue_false_alarm")}
                        for name, f in data["per_dataset"].items()},
        "config_toml": config_toml(config),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", help="the default's judge version in the store")
    parser.add_argument("--tuning", type=Path, default=ROOT / "tuning_subset.jsonl")
    parser.add_argument("--check", type=Path, default=ROOT.parent / "gold" / "eval_xl.jsonl")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "fit_per_domain.json")
    parser.add_argument("--skip-reproduction", action="store_true")
    parser.add_argument("--only-reproduction", action="store_true")
    parser.add_argument("--first", type=int,
                        help="per dataset: fit on the first N tuning items only (preliminary)")
    parser.add_argument("--config-output", type=Path,
                        default=ROOT / "configs" / "fit_per_domain.toml")
    args = parser.parse_args(argv)
    store = Store.open(args.db)
    version = resolve_version(store, args.version or "d5cd53d81137")
    tuning, check = load_gold(args.tuning), load_gold(args.check)
    report: dict[str, Any] = {"store_version": version, "tuning": "research/tuning_subset.jsonl",
                              "check": "gold/eval_xl.jsonl"}
    if not args.skip_reproduction:
        report["reproduction"] = reproduction(store, version, tuning, check)
        print(json.dumps(report["reproduction"], indent=2)[:3000], file=sys.stderr)
    if args.only_reproduction:
        report["per_dataset"] = ("not run yet: needs every tuning item judged; run "
                                 "`python research/fit_per_domain.py --db DB`")
    else:
        fitting = _first(tuning, args.first) if args.first else tuning
        report["tuning_items"] = len(fitting.entries)
        report["per_dataset"], rules = per_dataset(store, version, fitting, check)
        if rules:
            report["combined"] = combined(store, version, args.check, rules)
            args.config_output.write_text(report["combined"].pop("config_toml"),
                                          encoding="utf-8")
    args.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
