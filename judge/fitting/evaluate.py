"""Measuring a rule on held-out claims: its verdicts from the stored scores exactly as the
pipeline gives them (:func:`judge.decide.scores.decide_scores`, then the verdict assembly:
abstention check, subtypes, checks, review reasons), the figures with intervals, the drift
report against the current version, and the adoption rule.

**The adoption rule** (stated before measuring, printed with every fit): adopt the
candidate only when, on the held-out claims,

1. its balanced accuracy is at least the current version's;
2. its review queue catches at least the target share (``--queue-recall``, 90%) of the
   claims people rejected (queue recall);
3. its lenient rate (claims people rejected that it calls ``supported``) is at most the
   current version's plus :data:`LENIENT_SLACK` (2 points).

Point estimates decide (the intervals are reported beside them): the rule asks "not worse,
and the queue still catches what it must", not "proven better"; a holdout of a few dozen
claims cannot prove a few points either way, and refusing every such change would freeze
the rule a team's own reviews could improve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from calibration import CalibrationItem, DriftPair, build_drift_report
from calibration.report import Figures, figures
from judge.assembly.verdict import Assembler
from judge.config import JudgeConfig
from judge.decide import Decision
from judge.decide.probe import decide_probe, head_of
from judge.decide.scores import decide_scores
from judge.fitting.items import FitItem
from judge.verdicts import Verdict

#: How much the candidate's lenient rate may exceed the current version's.
LENIENT_SLACK = 0.02
#: The figures reported for candidate and baseline (contract keys of ``holdout``).
HOLDOUT_KEYS = ("balanced_accuracy", "contradicted_recall", "lenient_rate", "queue_recall",
                "queue_load", "queue_false_alarm")


def adoption_rule(queue_recall: float) -> str:
    return (
        "adopt the candidate only if, on the held-out claims, (1) its balanced accuracy is at "
        "least the current version's, (2) its review queue catches at least "
        f"{queue_recall:.0%} of the claims people rejected (queue recall), and (3) its "
        "lenient rate (claims people rejected that it calls supported) is at most the current "
        f"version's plus {LENIENT_SLACK * 100:.0f} points; point estimates decide, intervals "
        "are reported beside them")


def decider(config: JudgeConfig) -> Callable[[FitItem], Decision]:
    """How ``config`` (already one domain's rule) decides an item from its stored scores or
    vector, exactly as the pipeline does; a probe head is loaded (read and hashed) once."""
    if config.strategy == "probe":
        head = head_of(config)
        return lambda item: decide_probe(config, head, item.claim, item.located, item.vector,
                                         item.call_id)
    return lambda item: decide_scores(config, item.record, item.claim, item.located,
                                      item.scores, item.call_id)


def verdicts_for(items: Sequence[FitItem], config: JudgeConfig, version: str) -> list[Verdict]:
    """The verdict ``config`` gives each item from its stored scores (no model call): the
    rule of the item's domain, then the pipeline's verdict assembly."""
    rules: dict[str | None, tuple[Callable[[FitItem], Decision], Assembler]] = {}
    out = []
    for item in items:
        name, cfg = config.rule_for(item.domain)
        if name not in rules:
            rules[name] = (decider(cfg), Assembler(cfg, version))
        decide, assembler = rules[name]
        verdict = assembler.verdict(item.record, decide(item))
        out.append(verdict if name is None else verdict.model_copy(update={"rule": name}))
    return out


def calibration_items(items: Sequence[FitItem], verdicts: Sequence[Verdict]
                      ) -> list[CalibrationItem]:
    return [CalibrationItem(
        claim_id=i.claim.id, gold_label=i.label, judge_label=v.label,
        judge_subtype=v.subtype, in_queue=v.review, support=v.support,
        flagged=any(r != "doubtful_support" for r in v.review_reasons), dataset=i.dataset)
        for i, v in zip(items, verdicts, strict=True)]


def measure(items: Sequence[FitItem], verdicts: Sequence[Verdict], n_resamples: int = 2000
            ) -> Figures:
    """The calibration figures of these verdicts against the items' gold labels (bootstrap
    intervals with the calibration package's fixed seed)."""
    return figures(calibration_items(items, verdicts), n_resamples=n_resamples)


def _est(e: Any) -> dict[str, Any]:
    d = e.model_dump(mode="json")
    return {"value": _round(d["value"]), "ci_low": _round(d["ci_low"]),
            "ci_high": _round(d["ci_high"])}


def _round(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(v, 4)


def summary(f: Figures) -> dict[str, dict[str, Any]]:
    """The holdout figures of one version, each with its 95% interval."""
    return {
        "balanced_accuracy": _est(f.balanced_accuracy),
        "contradicted_recall": _est(f.per_label["contradicted"].recall),
        "lenient_rate": _est(f.lenient_rate),
        "queue_recall": _est(f.queue_recall),
        "queue_load": _est(f.queue_load),
        "queue_false_alarm": _est(f.queue_false_alarm),
    }


def compare(candidate: Figures, baseline: Figures) -> dict[str, Any]:
    """``{key: {"candidate": ..., "baseline": ...}}`` for every holdout figure."""
    c, b = summary(candidate), summary(baseline)
    return {"n": candidate.n, **{key: {"candidate": c[key], "baseline": b[key]}
                                 for key in HOLDOUT_KEYS}}


def rule_checks(holdout: dict[str, Any], queue_recall: float) -> list[dict[str, Any]]:
    """Each condition of the adoption rule on the holdout figures: whether it holds."""
    def value(key: str, who: str) -> float | None:
        found: float | None = holdout[key][who]["value"]
        return found

    ba_c, ba_b = value("balanced_accuracy", "candidate"), value("balanced_accuracy", "baseline")
    qr = value("queue_recall", "candidate")
    len_c, len_b = value("lenient_rate", "candidate"), value("lenient_rate", "baseline")
    return [
        {"name": "balanced_accuracy_not_lower", "holds": _ge(ba_c, ba_b),
         "detail": f"candidate {_pct(ba_c)} vs current {_pct(ba_b)}"},
        {"name": "queue_recall_reaches_target", "holds": _ge(qr, queue_recall),
         "detail": f"candidate {_pct(qr)}, target {_pct(queue_recall)}"},
        {"name": "lenient_rate_within_2_points",
         "holds": _ge(None if len_b is None else len_b + LENIENT_SLACK, len_c),
         "detail": f"candidate {_pct(len_c)} vs current {_pct(len_b)} + "
                   f"{LENIENT_SLACK * 100:.0f} points"},
    ]


def _ge(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and a >= b - 1e-12


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def drift_summary(items: Sequence[FitItem], baseline: Sequence[Verdict],
                  candidate: Sequence[Verdict], baseline_version: str, candidate_version: str,
                  limit: int = 50) -> dict[str, Any]:
    """The drift report from the current version to the candidate on the held-out claims:
    flips, and flips toward / away from gold."""
    pairs = [DriftPair(claim_id=i.claim.id, label_a=b.label, label_b=c.label,
                       rationale_a=b.rationale, rationale_b=c.rationale, gold_label=i.label)
             for i, b, c in zip(items, baseline, candidate, strict=True)]
    report = build_drift_report(pairs, version_a=baseline_version, version_b=candidate_version,
                                n_resamples=0)
    gold = report.gold
    claims = {i.claim.id: i for i in items}
    return {
        "version_a": baseline_version, "version_b": candidate_version, "n": report.n,
        "n_flipped": report.n_flipped,
        "toward_gold": gold.toward_gold if gold else 0,
        "away_from_gold": gold.away_from_gold if gold else 0,
        "neither": gold.neither if gold else 0,
        "flips": report.flips,
        "mcnemar_p": _round(report.mcnemar.p_value),
        "flipped": [{"claim_id": f.claim_id, "gold_id": claims[f.claim_id].gold_id,
                     "claim": claims[f.claim_id].claim.text, "from": f.label_a, "to": f.label_b,
                     "gold": f.gold_label, "direction": f.toward_gold}
                    for f in report.flipped[:limit]],
    }
