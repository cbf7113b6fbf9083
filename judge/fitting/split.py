"""Groups, folds, the holdout, and how much gold a fit needs.

Items of one group (one answer: see :func:`judge.fitting.items.group_of`) always fall on the same
side: the same cross-validation fold, the same side of the holdout, so no claim is judged
by a rule fitted on a sibling of it.

**The minimum gold.** A fit needs at least :data:`MIN_PER_LABEL` reviewed claims of each
label present in its gold and :data:`MIN_TOTAL` in all; the holdout that measures it needs
as many again (so a gold set with a holdout needs 20 of each label present and 80 in all).
Below that, the class-balanced fit gives a handful of claims the weight of a quarter of
the data and the holdout intervals span most of the scale: ``judge fit`` refuses, and says
which labels are short and how many more reviewed claims each needs.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence

from judge.fitting import FitRefused
from judge.fitting.items import FitItem
from judge.verdicts import LABELS

MIN_PER_LABEL = 10
MIN_TOTAL = 40


def bucket(key: str, seed: int = 0) -> int:
    """A stable 32-bit number for ``key`` under ``seed``. Seed 0 hashes the key alone: the
    fold assignment the research fits of the embedded default used, so ``judge fit``
    reproduces them."""
    text = key if seed == 0 else f"{seed}:{key}"
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def folds_of(items: Sequence[FitItem], folds: int = 10, seed: int = 0) -> list[int]:
    """Each item's cross-validation fold (items of one group share one)."""
    return [bucket(i.group, seed) % folds for i in items]


def label_counts(items: Sequence[FitItem]) -> dict[str, int]:
    counts = Counter(i.label for i in items)
    return {label: counts[label] for label in LABELS if counts[label]}


def shortfall(counts: dict[str, int], parts: int = 1, per_label: int = MIN_PER_LABEL,
              total: int = MIN_TOTAL) -> list[str]:
    """What ``counts`` lacks for ``parts`` (1: a fit; 2: a fit and its holdout), one phrase
    per short label and one for the total; empty when enough."""
    need_label, need_total = per_label * parts, total * parts
    short = [f"{label} has {n} (needs {need_label - n} more)"
             for label, n in counts.items() if n < need_label]
    n_all = sum(counts.values())
    if n_all < need_total:
        short.append(f"{n_all} in all (needs {need_total - n_all} more)")
    return short


def require_minimum(counts: dict[str, int], what: str, parts: int = 1,
                    measures: bool = False) -> None:
    """Raise :class:`FitRefused` when ``counts`` is short of the minimum (``measures``: the
    claims measure a fit rather than make one; the same minimum)."""
    short = shortfall(counts, parts)
    if short:
        subject = "the claims that measure a fit need" if measures else "a fit needs"
        need = (subject + " at least {l} reviewed claims of each label present and {t} in "
                "all" if parts == 1 else
                "a fit needs at least {l} reviewed claims of each label present and {t} in "
                "all, and its holdout as many again ({l2} of each label, {t2} in all)").format(
            l=MIN_PER_LABEL, t=MIN_TOTAL, l2=2 * MIN_PER_LABEL, t2=2 * MIN_TOTAL)
        raise FitRefused(f"too little gold in {what}: {need}; " + "; ".join(short)
                         + ". Review more claims of the short labels.")


def holdout_split(items: Sequence[FitItem], fraction: float, seed: int = 0
                  ) -> tuple[list[int], list[int]]:
    """(fit indexes, holdout indexes): whole groups in a seeded order go to the holdout
    while they fit its share of each label (``fraction`` of the label's claims, but at least
    :data:`MIN_PER_LABEL` and leaving the fit as many), so both sides keep every label."""
    counts = Counter(i.label for i in items)
    target = {label: min(max(math.ceil(fraction * n), MIN_PER_LABEL), n - MIN_PER_LABEL)
              for label, n in counts.items()}
    # fill the holdout up to MIN_TOTAL from the labels with the most room left
    while sum(target.values()) < MIN_TOTAL:
        room = {label: counts[label] - MIN_PER_LABEL - target[label] for label in counts}
        label = max(room, key=lambda k: (room[k], k))
        if room[label] <= 0:
            break
        target[label] += 1
    groups: dict[str, list[int]] = {}
    for k, item in enumerate(items):
        groups.setdefault(item.group, []).append(k)
    taken: Counter[str] = Counter()
    held: list[int] = []
    for group in sorted(groups, key=lambda g: (bucket(f"holdout:{g}", seed), g)):
        members = Counter(items[k].label for k in groups[group])
        if all(taken[label] + n <= target[label] for label, n in members.items()):
            taken.update(members)
            held += groups[group]
    held_set = set(held)
    return [k for k in range(len(items)) if k not in held_set], sorted(held)
