"""Which fit a judge version's rule takes: a probe head from stored vectors (strategy
``probe``), else a linear rule from stored option scores (strategy ``scores``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judge.config import JudgeConfig
from judge.config.score_model import ScoreModel
from judge.decide.probe import head_of
from judge.decide.probe_head import LanguageHeads, LanguageShift, ProbeHead
from judge.fitting.items import FitItem
from judge.fitting.logistic import Fitted, fit_rule
from judge.fitting.probe import fit_probe_rule


def current_rule(config: JudgeConfig, domain: str | None) -> ScoreModel | ProbeHead | None:
    """What decides the domain's answers now: its linear rule, or its probe head."""
    cfg = config.rule_for(domain)[1]
    return head_of(cfg) if config.strategy == "probe" else cfg.score_model


def kept_shift(config: JudgeConfig, domain: str | None) -> LanguageShift | None:
    """The language offsets a head fitted for the domain keeps: those of the head deciding
    its claims now (none for a linear rule, or a head without them)."""
    base = current_rule(config, domain) if config.strategy == "probe" else None
    return base.shift if isinstance(base, ProbeHead) else None


def kept_languages(config: JudgeConfig, domain: str | None) -> LanguageHeads | None:
    """The heads per language a head fitted for the domain keeps: those of the head deciding
    its claims now (judge.decide.probe_head.LanguageHeads)."""
    base = current_rule(config, domain) if config.strategy == "probe" else None
    return base.languages if isinstance(base, ProbeHead) else None


def fit_items_rule(items: Sequence[FitItem], fold: Sequence[int], names: Sequence[str],
                   queue_recall: float, prior: ScoreModel | ProbeHead | None,
                   read_with: dict[str, Any] | None = None,
                   shift: LanguageShift | None = None,
                   languages: LanguageHeads | None = None) -> Fitted:
    """The fit of a probe head (items with vectors, ``prior`` a head) or a linear rule.
    ``read_with``: how the vectors were read (:func:`judge.decide.probe.read_with`: the
    prompt, the layer), recorded in the head (a config that reads otherwise refuses it).
    ``shift``: the language offsets the head keeps (those of the head deciding now);
    ``languages``: the heads per language it keeps."""
    y = np.array([i.y for i in items])
    if isinstance(prior, ProbeHead) or (items and items[0].vector is not None):
        x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in items])
        return fit_probe_rule(x, y, fold, queue_recall,
                              prior if isinstance(prior, ProbeHead) else None,
                              about=read_with, shift=shift,
                              texts=[i.read for i in items] if shift is not None else None,
                              languages=languages)
    return fit_rule([i.features for i in items], y, fold, names, queue_recall,
                    prior if isinstance(prior, ScoreModel) else None)
