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


def current_rule(config: JudgeConfig, domain: str | None,
                 items: Sequence[FitItem] = ()) -> ScoreModel | ProbeHead | None:
    """What decides the domain's answers now: its linear rule, or its probe head. For a head
    with heads per language (:class:`judge.decide.probe_head.LanguageHeads`) and ``items``
    to fit on, the head that decides most of them: the head of the language most of them
    are read in, else the outer head (with its heads per language)."""
    cfg = config.rule_for(domain)[1]
    if config.strategy != "probe":
        return cfg.score_model
    head = head_of(cfg)
    if head.languages is None or not items:
        return head
    deciders = [head.languages.head_for(i.read) for i in items]
    for own in head.languages.heads.values():
        if 2 * sum(d is own for d in deciders) > len(items):
            return own
    return head


def kept(base: ScoreModel | ProbeHead | None
         ) -> tuple[LanguageShift | None, LanguageHeads | None]:
    """What a head fitted in the place of ``base`` (the rule deciding its claims now,
    :func:`current_rule`) keeps of it: its language offsets and its heads per language (none
    for a linear rule, or a head without them). A fit on claims most of which a head of their
    language decides learns that head's place, and keeps no heads per language."""
    if not isinstance(base, ProbeHead):
        return None, None
    return base.shift, base.languages


def left_to_languages(items: Sequence[FitItem], languages: LanguageHeads | None
                      ) -> tuple[list[FitItem], dict[str, list[FitItem]]]:
    """(the items the outer head decides, by language those a kept head of their language
    decides): a fit of the outer head learns from the first only; the others are its heads
    per language's, which the fit keeps as they are."""
    if languages is None:
        return list(items), {}
    own: list[FitItem] = []
    theirs: dict[str, list[FitItem]] = {}
    for item in items:
        language = languages.language(item.read) or ""
        if language in languages.heads:
            theirs.setdefault(language, []).append(item)
        else:
            own.append(item)
    return own, theirs


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
