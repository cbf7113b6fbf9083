"""The learning curve: holdout quality against the number of reviewed claims the rule was
fitted on, so a team knows how much reviewing pays.

For each size (:data:`SIZES`, capped by the claims there are, plus all of them), a few
seeded draws of whole answer groups from the fitting side are fitted exactly as
``judge fit`` fits (L2 by grouped cross-validation, the queue threshold out of fold) and
measured on the same held-out claims. Each figure is the mean over the draws, with the mean
of the draws' 95% intervals (the holdout's sampling error) and the range over the draws
(which claims happened to be reviewed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from judge.config import JudgeConfig
from judge.config.score_model import ScoreModel
from judge.decide.probe_head import LanguageHeads, LanguageShift, ProbeHead
from judge.fitting.evaluate import measure, summary, verdicts_for
from judge.fitting.items import FitItem
from judge.fitting.logistic import Fitted
from judge.fitting.rules import fit_items_rule
from judge.fitting.split import bucket, folds_of, label_counts, shortfall

SIZES: tuple[int, ...] = (25, 50, 100, 200)
DRAWS = 3
CURVE_KEYS = ("balanced_accuracy", "queue_recall", "queue_load", "queue_false_alarm")


def draw(items: Sequence[FitItem], size: int, index: int, seed: int) -> list[FitItem]:
    """Whole groups in a seeded order until ``size`` claims (the last group may pass it)."""
    groups: dict[str, list[FitItem]] = {}
    for item in items:
        groups.setdefault(item.group, []).append(item)
    chosen: list[FitItem] = []
    for group in sorted(groups, key=lambda g: (bucket(f"curve:{index}:{g}", seed), g)):
        if len(chosen) >= size:
            break
        chosen += groups[group]
    return chosen


def learning_curve(
    fit_items: Sequence[FitItem],
    holdout: Sequence[FitItem],
    names: Sequence[str],
    build: Callable[[Fitted], JudgeConfig],
    *,
    sizes: Sequence[int] = SIZES,
    draws: int = DRAWS,
    seed: int = 0,
    queue_recall: float = 0.9,
    n_resamples: int = 1000,
    prior: ScoreModel | ProbeHead | None = None,
    read_with: dict[str, Any] | None = None,
    shift: LanguageShift | None = None,
    languages: LanguageHeads | None = None,
) -> list[dict[str, Any]]:
    """One point per size: the mean holdout figures of rules fitted on that many claims.
    ``build`` turns a fitted rule into the judge config to measure; ``shift``: the language
    offsets a fitted head keeps, ``languages`` its heads per language."""
    n_all = len(fit_items)
    points = sorted({s for s in sizes if s < n_all} | {n_all})
    out = []
    for size in points:
        rows = []
        for index in range(draws if size < n_all else 1):
            chosen = draw(fit_items, size, index, seed) if size < n_all else list(fit_items)
            fitted = fit_items_rule(chosen, folds_of(chosen, seed=seed), names, queue_recall,
                                    prior, read_with, shift, languages)
            verdicts = verdicts_for(holdout, build(fitted), "curve")
            rows.append((len(chosen), summary(measure(holdout, verdicts, n_resamples)),
                         label_counts(chosen)))
        point: dict[str, Any] = {
            "size": size, "n": round(float(np.mean([r[0] for r in rows])), 1),
            "draws": len(rows),
            "below_minimum": any(shortfall(r[2]) for r in rows),
        }
        for key in CURVE_KEYS:
            values = [r[1][key] for r in rows]
            got = [v["value"] for v in values if v["value"] is not None]
            low = [v["ci_low"] for v in values if v["ci_low"] is not None]
            high = [v["ci_high"] for v in values if v["ci_high"] is not None]
            point[key] = {
                "value": round(float(np.mean(got)), 4) if got else None,
                "ci_low": round(float(np.mean(low)), 4) if low else None,
                "ci_high": round(float(np.mean(high)), 4) if high else None,
                "min": round(min(got), 4) if got else None,
                "max": round(max(got), 4) if got else None,
            }
        out.append(point)
    return out
