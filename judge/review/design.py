"""The queue's sampling design over classified candidates: which strata are taken whole, the
passed claims nearest the threshold (``near_threshold``, the reviews that teach the most) and
the seeded sample of the other passed claims, with each stratum's size, sample size and
weight, and the reading order (:func:`reading_key`). It imports the queue for types only:
:mod:`judge.review.queue` builds and stores the queue and calls :func:`draw`."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judge.review.triage import PASSED_STRATA

if TYPE_CHECKING:  # the queue builds its candidates and options and calls draw()
    from judge.review.queue import Candidate, QueueOptions

#: The strata that partition a queue's scope (:mod:`judge.review.queue` says what each holds).
STRATA = ("flagged", "judge_error", "refused", "near_threshold", "passed")


def sample_size(stratum_size: int, rate: float, minimum: int) -> int:
    """``max(minimum, ceil(rate * N))``, at most ``N``."""
    return min(stratum_size, max(minimum, math.ceil(rate * stratum_size - 1e-9)))


def reading_key(order: str, stratum: str, risk_value: float, rank: int, answer_id: str,
                idx: int, subject: str) -> tuple[Any, ...]:
    """Sort key of a queue item under ``order`` (:data:`judge.review.queue.ORDERS`): ``risk``
    reads flagged items by falling :func:`judge.review.queue.risk` (category rank, then input
    order, break ties), then the passed claims nearest the threshold, and the sampled passes
    last; ``priority`` reads by category rank, then input order."""
    if order == "risk":
        group = PASSED_STRATA.index(stratum) + 1 if stratum in PASSED_STRATA else 0
        return (group, -risk_value, rank, answer_id, idx, subject)
    return (rank, answer_id, idx, subject)


def draw(cands: Sequence[Candidate], options: QueueOptions, order: Sequence[str]
         ) -> tuple[list[Candidate], dict[str, dict[str, Any]]]:
    """The queue's design over classified candidates: the passed claims nearest the
    threshold move to the ``near_threshold`` stratum (all taken), the other passed claims are
    sampled with the seed; every other stratum is taken whole. Returns the chosen candidates
    in reading order and each stratum's size, sample size and weight."""
    passed = sorted((c for c in cands if c.stratum == "passed"), key=lambda c: c.subject)
    near = nearest_passed(passed, len(cands) - len(passed), options)
    passed = [c for c in passed if c.subject not in near]
    for c in cands:
        if c.subject in near:
            c.stratum, c.category = "near_threshold", "near_threshold"
            c.rank = list(order).index("near_threshold")
    sizes = Counter(c.stratum for c in cands)
    n_pass = sample_size(len(passed), options.sample_rate, options.min_sample)
    sampled = random.Random(f"{options.seed}:passed").sample(passed, n_pass)
    chosen = [c for c in cands if c.stratum != "passed"] + sampled
    chosen.sort(key=lambda c: reading_key(options.order, c.stratum, c.risk, c.rank,
                                          c.answer_id, c.idx, c.subject))
    strata: dict[str, dict[str, Any]] = {}
    for name in STRATA:
        size = sizes.get(name, 0)
        if not size:
            continue
        n = n_pass if name == "passed" else size
        strata[name] = {
            "stratum_size": size, "sample_size": n, "weight": (size / n) if n else None,
        }
    return chosen, strata


def nearest_passed(passed: Sequence[Candidate], others: int, options: QueueOptions
                   ) -> set[str]:
    """The subjects of the passed claims nearest the threshold (lowest flag score first: the
    score of the claim's operating point, :func:`judge.review.triage.flag_score`), so many
    that they make ``informative_share`` of the queue (``others``: the items the queue takes
    besides passed claims; the passed sample is added to it as it will be)."""
    scored = [c for c in passed if c.score is not None]
    n = min(len(scored), near_count(others, len(passed), options))
    scored.sort(key=lambda c: (c.score, c.subject))
    return {c.subject for c in scored[:n]}


def near_count(others: int, passed: int, options: QueueOptions) -> int:
    """How many passed claims nearest the threshold a queue takes: so many that they make
    ``informative_share`` of it (``others``: the items it takes besides passed claims; the
    sample of the other passed claims is counted as it will be)."""
    share = options.informative_share
    if share <= 0 or not passed:
        return 0
    expected = others + sample_size(passed, options.sample_rate, options.min_sample)
    return min(passed, math.ceil(share / (1 - share) * expected - 1e-9))


def load_parts(flagged: int, passed: int, options: QueueOptions) -> dict[str, int]:
    """What reviewers get from a queue over ``flagged`` + ``passed`` claims, in parts: every
    flagged claim, the passed claims nearest the threshold (:func:`near_count`) and the
    seeded sample of the other passed claims; ``total`` is their sum."""
    near = near_count(flagged, passed, options)
    sampled = sample_size(passed - near, options.sample_rate, options.min_sample)
    return {"claims": flagged + passed, "flagged": flagged, "near_threshold": near,
            "sampled": sampled, "total": flagged + near + sampled}
