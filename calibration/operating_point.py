"""The review queue's operating point: the support threshold that catches a stated share of
the problems, set from human gold with a finite-sample guarantee.

A claim goes to review when its *flag score* is below the threshold. The flag score is the
judge's probability that the claim is supported, or ``-inf`` for a claim the queue takes
whatever its score (a failed deterministic check, a ``judge_error``, a refused answer):
those are never missed. A *problem* is a claim people did not label ``supported``.

**Method: an exact binomial bound on the miss rate** (the training-conditional, or "PAC",
conformal threshold). Take the ``n`` gold problem claims, highest flag score first. A
threshold just above the ``(k+1)``-th highest misses the top ``k``; on new claims drawn like
the gold, its miss rate exceeds ``alpha = 1 - target`` with probability
``P(Binomial(n, alpha) <= k)`` (the miss rate of that order statistic is Beta(k+1, n-k)
distributed). The largest ``k`` with that probability at most ``delta = 1 - confidence``
gives the threshold; equivalently, the one-sided Clopper-Pearson upper bound of ``k`` misses
in ``n`` is at most ``alpha``. So "recall >= target with confidence ``1 - delta``" holds
exactly, for any score distribution, once ``n >= log(delta) / log(1 - alpha)`` problems are
in the gold (22 for 90% recall with 90% confidence); with fewer no threshold can state the
guarantee and :attr:`OperatingPoint.sufficient` is False.

References: V. Vovk, "Conditional validity of inductive conformal predictors", ACML 2012
(training-conditional validity through the binomial tail); S. Bates, A. Angelopoulos, L. Lei,
J. Malik, M. Jordan, "Distribution-free, risk-controlling prediction sets", JACM 2021 (the
upper confidence bound on a risk, binomial bound); A. Angelopoulos, S. Bates, A. Fisch,
L. Lei, T. Schuster, "Conformal risk control", ICLR 2024 (the marginal form).

With design weights (a stratified review: passed claims sampled at a rate) the same bound
is read with the weighted miss share and the Korn-Graubard effective sample size (E. Korn,
B. Graubard, "Confidence intervals for proportions with small expected number of positive
counts estimated from survey data", Survey Methodology 1998): the design variance of the
miss share, strata being the distinct weights (weight 1: a census), every gold claim
counted so that the number of problems a sample holds is random too; capped at Kish's
effective size. That is an approximation, said in :attr:`OperatingPoint.method`;
unweighted gold is exact.

Pure functions over plain numbers (scipy); nothing here reads a store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numpy as np
import scipy.stats as sps

from calibration.results import Estimate, Num, ResultModel
from calibration.stats import wilson_bounds

EXACT_METHOD = "exact binomial bound on the miss rate (training-conditional conformal threshold)"
WEIGHTED_METHOD = (EXACT_METHOD + ", with design weights read through the Korn-Graubard "
                   "effective sample size (approximate)")
#: The defaults: catch 90% of the problems, stated with 90% confidence.
DEFAULT_TARGET_RECALL = 0.9
DEFAULT_CONFIDENCE = 0.9
#: The grid of targets and confidences set wherever points are set for later choice (the
#: points packaged with a head, the points ``judge fit`` sets for its candidate): a team's
#: ``[review]`` target and confidence then usually find one ready.
STANDARD_TARGETS = (0.8, 0.85, 0.9, 0.95)
STANDARD_CONFIDENCES = (0.9, 0.95)


class OperatingPoint(ResultModel):
    """A threshold on the flag score and what it promises, with the gold it was set on."""

    method: str
    target_recall: float
    confidence: float
    #: flag a claim when its score is below this; None when the gold is too small
    threshold: Num
    sufficient: bool
    n: int
    n_problems: int
    n_supported: int
    #: problem claims the threshold may leave out and still state the guarantee
    allowed_misses: Num
    #: the effective number of problem claims (= n_problems without weights)
    n_effective: Num
    #: gold problem claims at or above the threshold (weighted share in ``gold_recall``)
    gold_misses: int
    #: the upper confidence bound on the miss rate: recall >= 1 - this, with ``confidence``
    miss_bound: Num
    gold_recall: Estimate
    false_alarm: Estimate
    load: Estimate
    #: the fewest problem claims with which any threshold states the guarantee
    min_problems: int

    @property
    def recall_bound(self) -> float:
        return 1.0 - self.miss_bound

    def statement(self) -> str:
        """One sentence: what the threshold promises and what it costs on the gold."""
        if not self.sufficient:
            return (f"{self.n_problems} gold problem claim(s) of {self.n}: at least "
                    f"{self.min_problems} are needed to state recall >= {self.target_recall:.2f} "
                    f"with {self.confidence:.0%} confidence")
        return (f"support < {self.threshold:.4g}, set on {self.n} gold claims "
                f"({self.n_problems} problems): recall >= {self.target_recall:.2f} with "
                f"{self.confidence:.0%} confidence; expected load {_pct(self.load)}, "
                f"false alarms {_pct(self.false_alarm)}")


def _pct(e: Estimate) -> str:
    if not math.isfinite(e.value):
        return "n/a"
    if math.isfinite(e.ci_low) and math.isfinite(e.ci_high):
        return f"{e.value:.0%} ({e.ci_low:.0%}-{e.ci_high:.0%})"
    return f"{e.value:.0%}"


def min_problems(target_recall: float, confidence: float) -> int:
    """The fewest problem claims for which a threshold can state the guarantee (0 misses)."""
    _check(target_recall, confidence)
    return math.ceil(math.log(1 - confidence) / math.log(target_recall) - 1e-12)


def miss_upper_bound(misses: float, n: float, confidence: float) -> float:
    """One-sided Clopper-Pearson upper bound of a miss rate ``misses / n`` (``misses`` and
    ``n`` may be effective, non-integer counts)."""
    if n <= 0:
        return 1.0
    if misses >= n:
        return 1.0
    return float(sps.beta.ppf(confidence, misses + 1, n - misses))


def _check(target_recall: float, confidence: float) -> None:
    if not 0 < target_recall < 1:
        raise ValueError(f"target recall {target_recall} must be between 0 and 1")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} must be between 0 and 1")


def set_operating_point(
    scores: Sequence[float],
    problems: Sequence[bool],
    *,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    weights: Sequence[float] | None = None,
) -> OperatingPoint:
    """The smallest threshold whose miss rate on problem claims is at most ``1 -
    target_recall`` with ``confidence`` (module docstring). ``scores``: each gold claim's flag
    score (``-inf``: always flagged); ``problems``: whether people rejected it; ``weights``:
    design weights (stratum size / sample size), default 1."""
    _check(target_recall, confidence)
    s = np.asarray(scores, dtype=float)
    p = np.asarray(problems, dtype=bool)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    if not (len(s) == len(p) == len(w)):
        raise ValueError("scores, problems and weights differ in length")
    if np.isnan(s).any():
        raise ValueError("a flag score is nan")
    if (w < 1).any():
        raise ValueError("a design weight is below 1")
    alpha = 1 - target_recall
    weighted = weights is not None and not np.allclose(w, 1.0)
    ps, pw = s[p], w[p]
    total = float(pw.sum())
    kish = float(total * total / (pw * pw).sum()) if len(pw) else 0.0
    order = np.argsort(-ps, kind="stable")
    ps, pw = ps[order], pw[order]

    def bound(j: int) -> tuple[float, float]:
        """(upper bound on the miss rate, effective size) when the top ``j`` are missed."""
        if not weighted:
            return miss_upper_bound(j, len(ps), confidence), float(len(ps))
        missed = p & (s >= ps[j - 1]) if j else np.zeros(len(s), dtype=bool)
        share, n_eff = _effective(missed, p, w, kish)
        return miss_upper_bound(share * n_eff, n_eff, confidence), n_eff

    best: int | None = None  # how many of the highest problem scores may be missed
    n_eff = kish
    if not weighted:
        k = allowed_misses(len(ps), target_recall, confidence)
        best = None if k < 0 else _largest_boundary(ps, k)
    for j in range(len(ps) + 1) if weighted else ():
        if j and j < len(ps) and ps[j] == ps[j - 1]:
            continue  # a threshold cannot separate tied scores
        if j and not math.isfinite(ps[j - 1]):
            break  # always-flagged claims are never missed
        upper, size = bound(j)
        if upper <= alpha + 1e-12:
            best, n_eff = j, size
        else:
            break
    threshold = math.nan
    misses = 0
    if best is not None:
        threshold = _between(ps, best)
        misses = best
    flagged = s < threshold if best is not None else np.ones_like(s, dtype=bool)
    sup = ~p
    miss_bound = bound(misses)[0] if best is not None and total else math.nan
    return OperatingPoint(
        method=WEIGHTED_METHOD if weighted else EXACT_METHOD,
        target_recall=target_recall, confidence=confidence, threshold=threshold,
        sufficient=best is not None, n=int(len(s)), n_problems=int(p.sum()),
        n_supported=int(sup.sum()),
        allowed_misses=(float(pw[:misses].sum()) if best is not None else math.nan),
        n_effective=n_eff, gold_misses=int(misses), miss_bound=miss_bound,
        gold_recall=_share(flagged[p], w[p]), false_alarm=_share(flagged[sup], w[sup]),
        load=_share(flagged, w), min_problems=min_problems(target_recall, confidence),
    )


@cache
def allowed_misses(n: int, target_recall: float, confidence: float) -> int:
    """The most of ``n`` problem claims a threshold may miss and still state recall >=
    ``target_recall`` with ``confidence`` (the exact bound; -1: no threshold can)."""
    best = -1
    for k in range(n):
        if miss_upper_bound(k, n, confidence) <= 1 - target_recall + 1e-12:
            best = k
        else:
            break
    return best


def _largest_boundary(desc: np.ndarray, k: int) -> int:
    """The most of the highest scores (``desc``, high to low) a threshold can miss, at most
    ``k``: never splitting tied scores, never an always-flagged (-inf) one."""
    for j in range(min(k, len(desc)), 0, -1):
        if (j == len(desc) or desc[j] != desc[j - 1]) and math.isfinite(desc[j - 1]):
            return j
    return 0


def exact_threshold(scores: Sequence[float] | np.ndarray, problems: Sequence[bool] | np.ndarray,
                    target_recall: float = DEFAULT_TARGET_RECALL,
                    confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The threshold :func:`set_operating_point` sets on unweighted gold, without its figures
    (nan when the gold is too small): for resampling loops."""
    ps = np.sort(np.asarray(scores, dtype=float)[np.asarray(problems, dtype=bool)])[::-1]
    k = allowed_misses(len(ps), target_recall, confidence)
    return math.nan if k < 0 else _between(ps, _largest_boundary(ps, k))


def _effective(missed: np.ndarray, problems: np.ndarray, w: np.ndarray, kish: float
               ) -> tuple[float, float]:
    """(weighted miss share among problems, Korn-Graubard effective size): the share's
    linearised design variance over every claim, strata = distinct weights, weight-1 strata
    a census; the binomial size with that variance, at most Kish's."""
    total = float((w * problems).sum())
    share = float((w * missed).sum()) / total
    z = w * (missed - share * problems) / total
    var = 0.0
    for h in np.unique(w):
        sel = w == h
        n = int(sel.sum())
        if h == 1.0 or n < 2:
            continue
        var += n / (n - 1) * float(((z[sel] - z[sel].mean()) ** 2).sum())
    if share <= 0 or var <= 0:
        return share, kish
    return share, min(kish, share * (1 - share) / var)


def _between(desc: np.ndarray, j: int) -> float:
    """A threshold that flags ``desc[j:]`` and misses ``desc[:j]`` (``desc`` sorted high to
    low): halfway between the two scores, rounded to 4 decimals when that stays between them
    (the threshold is shown to people)."""
    if j >= len(desc) or not math.isfinite(desc[j]):
        return 0.0  # every problem is always flagged: the score flags nothing
    low = float(desc[j])
    if j == 0:  # nothing may be missed: just above the highest problem score
        return math.floor(low * 10000 + 1) / 10000
    high = float(desc[j - 1])
    mid = round((low + high) / 2, 4)
    if not low < mid <= high:
        mid = float(np.nextafter(low, math.inf))
    return mid


def _share(flags: np.ndarray, weights: np.ndarray, confidence: float = 0.95) -> Estimate:
    """The (weighted) share of ``flags`` with a Wilson interval on the effective size."""
    if not len(flags):
        return Estimate(value=math.nan, n=0)
    total = float(weights.sum())
    value = float(weights[flags].sum()) / total
    n_eff = total * total / float((weights * weights).sum())
    low, high = wilson_bounds(value, n_eff, confidence)
    return Estimate(value=value, ci_low=low, ci_high=high, n=int(len(flags)))


class RuleRecall(ResultModel):
    """What a fixed flag rule (a label judge's: flag what is not labelled ``supported``, a
    failed check, a review reason) catches of the gold problem claims: a recall with its
    one-sided lower confidence bound. Not an operating point: nothing can be tuned, so no
    target is promised; the bound says how much the rule catches at least."""

    method: str
    confidence: float
    n: int
    n_problems: int
    #: gold problem claims the rule flags (weighted share in ``recall``)
    caught: int
    recall: Estimate
    #: one-sided lower confidence bound of the recall (Clopper-Pearson; on the effective
    #: counts with design weights)
    recall_bound: Num
    load: Estimate

    def statement(self) -> str:
        """One sentence: what the rule catches and what it costs on the gold."""
        if not self.n_problems:
            return (f"its label rule flags {_pct(self.load)} of {self.n} gold claims; the gold "
                    "holds no problem claim, so no recall can be stated")
        return (f"its label rule flags {self.caught} of {self.n_problems} gold problem claims "
                f"({self.n} gold claims): recall >= {self.recall_bound:.2f} with "
                f"{self.confidence:.0%} confidence (a lower bound of what the labels catch, not "
                f"a tunable point; {self.recall.value:.0%} on the gold), load "
                f"{_pct(self.load)}")


RULE_METHOD = "one-sided Clopper-Pearson lower bound of the rule's recall on the gold"


def rule_recall(flagged: Sequence[bool], problems: Sequence[bool], *,
                confidence: float = DEFAULT_CONFIDENCE,
                weights: Sequence[float] | None = None) -> RuleRecall:
    """:class:`RuleRecall` of a fixed rule's ``flagged`` claims among the gold claims
    (``problems``: whether people rejected each; ``weights``: design weights, default 1)."""
    _check(0.5, confidence)
    f = np.asarray(flagged, dtype=bool)
    p = np.asarray(problems, dtype=bool)
    w = np.ones(len(f)) if weights is None else np.asarray(weights, dtype=float)
    if not (len(f) == len(p) == len(w)):
        raise ValueError("flagged, problems and weights differ in length")
    recall = _share(f[p], w[p])
    bound = math.nan
    if p.any():
        pw = w[p]
        n_eff = float(pw.sum() ** 2 / (pw * pw).sum())
        caught = recall.value * n_eff
        bound = 0.0 if caught <= 0 else float(
            sps.beta.ppf(1 - confidence, caught, n_eff - caught + 1))
    return RuleRecall(
        method=RULE_METHOD if weights is None or np.allclose(w, 1.0)
        else RULE_METHOD + ", with design weights read through Kish's effective size",
        confidence=confidence, n=int(len(f)), n_problems=int(p.sum()),
        caught=int((f & p).sum()), recall=recall, recall_bound=bound, load=_share(f, w))


def recall_at(threshold: float, scores: Sequence[float], problems: Sequence[bool]) -> float:
    """The share of problem claims with a score below ``threshold`` (nan without problems)."""
    s = np.asarray(scores, dtype=float)[np.asarray(problems, dtype=bool)]
    return float((s < threshold).mean()) if len(s) else math.nan
