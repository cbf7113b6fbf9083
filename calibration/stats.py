"""Agreement and error statistics over label tables: pure functions of plain data.

Conventions used throughout:

* A *table* is a numpy array ``table[i, j]`` = count of items with row category ``i`` and
  column category ``j``. For judge-versus-gold tables rows are gold labels and columns judge
  labels, in :data:`~calibration.labels.JUDGE_LABELS` order.
* ``judge_error`` is a category of its own on the judge side; it never matches a gold label,
  so it counts as a miss for accuracy, recall and kappa. It is never dropped.
* Undefined values are ``nan`` (e.g. kappa when both sides use one and the same label;
  precision of a label the judge never assigned), never 0.
* Bootstrap intervals are percentile intervals from a seeded ``numpy.random.Generator``;
  the same inputs and seed always give the same interval. Resampling items with replacement
  is done by drawing whole tables from the multinomial with the observed cell shares, which
  is the same distribution and needs no per-item arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np
from scipy import stats as sps

from calibration.labels import (
    JUDGE_LABELS,
    LABELS,
    check_labels,
    check_same_length,
)
from calibration.results import NAN, Estimate, Num, ResultModel, SignificanceResult, nan_estimate

#: Seed of every bootstrap unless the caller passes another one.
DEFAULT_SEED = 20240
#: Bootstrap resamples unless the caller passes another number (0 skips the bootstrap).
DEFAULT_RESAMPLES = 2000
#: A bootstrap interval is reported only if the statistic is defined in at least this share
#: of resamples (e.g. kappa is undefined in a resample where both sides use a single label).
MIN_DEFINED_SHARE = 0.9
#: McNemar uses the exact binomial test when the discordant count is below this.
MCNEMAR_EXACT_BELOW = 25


# --------------------------------------------------------------------------- tables


def confusion_matrix(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    gold_labels: Sequence[str] = LABELS,
    judge_labels: Sequence[str] = JUDGE_LABELS,
) -> np.ndarray:
    """Count table ``[gold index, judge index]`` of shape ``(len(gold_labels),
    len(judge_labels))``. Values outside the label sets raise ``ValueError``."""
    check_same_length(gold=gold, judged=judged)
    check_labels(gold, gold_labels, "gold")
    check_labels(judged, judge_labels, "judged")
    row = {label: i for i, label in enumerate(gold_labels)}
    col = {label: j for j, label in enumerate(judge_labels)}
    table = np.zeros((len(gold_labels), len(judge_labels)), dtype=np.int64)
    for g, j in zip(gold, judged, strict=True):
        table[row[g], col[j]] += 1
    return table


def square_table(
    a: Sequence[Hashable], b: Sequence[Hashable]
) -> tuple[np.ndarray, list[Hashable]]:
    """Square count table of two raters over the union of their categories (first-seen
    order). Returns ``(table, categories)``."""
    check_same_length(a=a, b=b)
    categories: list[Hashable] = list(dict.fromkeys([*a, *b]))
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        table[index[x], index[y]] += 1
    return table, categories


def _diagonal(tables: np.ndarray) -> np.ndarray:
    """Sum of the main diagonal of the last two axes (also for non-square tables)."""
    k = min(tables.shape[-2:])
    diagonal: np.ndarray = np.einsum("...ii->...", tables[..., :k, :k])
    return diagonal


# --------------------------------------------------------------------------- bootstrap


def bootstrap_table_ci(
    table: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over items summarised by ``table``.

    ``statistic`` maps a stack of tables ``(B, *table.shape)`` to ``(B,)`` values (``nan``
    where undefined). Returns ``(nan, nan)`` with fewer than 2 items, with
    ``n_resamples == 0``, or when the statistic is undefined in more than
    ``1 - MIN_DEFINED_SHARE`` of the resamples.
    """
    table = np.asarray(table)
    n = int(table.sum())
    if n < 2 or n_resamples <= 0:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    shares = table.ravel() / n
    draws = rng.multinomial(n, shares, size=n_resamples).reshape(n_resamples, *table.shape)
    values = np.asarray(statistic(draws), dtype=float)
    defined = values[np.isfinite(values)]
    if defined.size < MIN_DEFINED_SHARE * n_resamples:
        return NAN, NAN
    alpha = 1.0 - confidence
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


# --------------------------------------------------------------------------- kappa


def kappa_from_tables(tables: np.ndarray) -> np.ndarray:
    """Unweighted Cohen's kappa of one square table or a stack ``(..., k, k)``.

    ``kappa = (n * sum(diag) - sum(row_i * col_i)) / (n**2 - sum(row_i * col_i))``, computed
    in integers so that the undefined case (chance agreement 1: both raters used one and the
    same category) is exactly detected and gives ``nan``.
    """
    tables = np.asarray(tables)
    if tables.shape[-1] != tables.shape[-2]:
        raise ValueError(f"kappa needs a square table, got shape {tables.shape[-2:]}")
    n = tables.sum(axis=(-2, -1))
    chance = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1)
    numerator = n * _diagonal(tables) - chance
    denominator = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denominator != 0, numerator / np.where(denominator == 0, 1, denominator),
                       np.nan)
    return out.astype(float)


def kappa_from_table(table: np.ndarray) -> float:
    """Unweighted Cohen's kappa of a square count table (``nan`` if undefined)."""
    return float(kappa_from_tables(np.asarray(table)))


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> Estimate:
    """Unweighted Cohen's kappa between two raters (judge and gold, two annotators, two
    judge versions) with a seeded percentile-bootstrap interval over items.

    Categories are the union of both sides' values, so ``judge_error`` is a category that
    agrees with nothing. A single shared label gives ``nan`` (kappa is undefined).
    """
    table, _ = square_table(a, b)
    value = kappa_from_table(table) if table.sum() else NAN
    if not math.isfinite(value):
        return nan_estimate(len(a))
    low, high = bootstrap_table_ci(
        table, kappa_from_tables, n_resamples=n_resamples, seed=seed, confidence=confidence
    )
    return Estimate(value=value, ci_low=low, ci_high=high, n=len(a))


# --------------------------------------------------------------------------- accuracy


def balanced_accuracy_from_tables(tables: np.ndarray) -> np.ndarray:
    """Mean recall over the rows (gold labels) that have at least one item.

    Works on a ``(rows, cols)`` table or a stack of them, whose first ``rows`` columns are the
    row categories in the same order (extra columns such as ``judge_error`` are misses).
    """
    tables = np.asarray(tables, dtype=float)
    k = tables.shape[-2]
    support = tables.sum(axis=-1)
    hits = np.diagonal(tables[..., :k, :k], axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(support > 0, hits / np.where(support > 0, support, 1), np.nan)
    present = (support > 0).sum(axis=-1)
    total = np.nansum(recall, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(present > 0, total / np.where(present > 0, present, 1), np.nan)


def accuracy(gold: Sequence[str], judged: Sequence[str], confidence: float = 0.95) -> Estimate:
    """Share of items whose judge label equals the gold label, with a Wilson interval.
    ``judge_error`` counts as wrong."""
    check_same_length(gold=gold, judged=judged)
    hits = sum(g == j for g, j in zip(gold, judged, strict=True))
    return wilson_interval(hits, len(gold), confidence)


def balanced_accuracy(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    labels: Sequence[str] = LABELS,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> Estimate:
    """Mean per-label recall over the labels present in gold (labels absent from gold are
    left out, not counted as 0), with a seeded bootstrap interval."""
    judge_labels = [*labels, *(x for x in JUDGE_LABELS if x not in labels)]
    table = confusion_matrix(gold, judged, gold_labels=labels, judge_labels=judge_labels)
    value = float(balanced_accuracy_from_tables(table))
    if not math.isfinite(value):
        return nan_estimate(len(gold))
    low, high = bootstrap_table_ci(
        table, balanced_accuracy_from_tables,
        n_resamples=n_resamples, seed=seed, confidence=confidence,
    )
    return Estimate(value=value, ci_low=low, ci_high=high, n=len(gold))


class LabelMetrics(ResultModel):
    """Precision, recall and F1 of one label, with the counts behind them.

    ``support`` = gold items with the label, ``predicted`` = judge items with the label,
    ``true_positives`` = both. Precision and recall carry Wilson intervals; F1 is
    ``nan`` when precision or recall is undefined, 0 when both are 0.
    """

    support: int
    predicted: int
    true_positives: int
    precision: Estimate
    recall: Estimate
    f1: Num


def _f1(precision: float, recall: float) -> float:
    if math.isnan(precision) or math.isnan(recall):
        return NAN
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def per_label_metrics(
    gold: Sequence[str],
    judged: Sequence[str],
    *,
    labels: Sequence[str] = LABELS,
    confidence: float = 0.95,
) -> dict[str, LabelMetrics]:
    """Per-label precision / recall / F1 (one-versus-rest) with counts."""
    table = confusion_matrix(gold, judged, gold_labels=labels, judge_labels=JUDGE_LABELS)
    out: dict[str, LabelMetrics] = {}
    for i, label in enumerate(labels):
        j = JUDGE_LABELS.index(label)
        tp = int(table[i, j])
        support = int(table[i].sum())
        predicted = int(table[:, j].sum())
        precision = wilson_interval(tp, predicted, confidence)
        recall = wilson_interval(tp, support, confidence)
        out[label] = LabelMetrics(
            support=support, predicted=predicted, true_positives=tp,
            precision=precision, recall=recall, f1=_f1(precision.value, recall.value),
        )
    return out


# --------------------------------------------------------------------------- proportions


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(sps.norm.ppf(1 - (1 - confidence) / 2))


def wilson_bounds(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score bounds for a proportion ``p`` over ``n`` (``n`` may be an effective,
    non-integer sample size; ``n = inf`` gives ``(p, p)``; ``n <= 0`` gives ``nan``)."""
    if not n > 0 or math.isnan(p):
        return NAN, NAN
    if math.isinf(n):
        return p, p
    z = _z(confidence)
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Proportion ``successes / n`` with its Wilson score interval (``nan`` when ``n == 0``)."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return nan_estimate(0)
    p = successes / n
    low, high = wilson_bounds(p, n, confidence)
    return Estimate(value=p, ci_low=low, ci_high=high, n=n)


def roc_auc(positives: Sequence[float], negatives: Sequence[float],
            confidence: float = 0.95) -> Estimate:
    """ROC AUC: the chance a positive scores above a negative (ties count one half; the
    Mann-Whitney statistic over both counts), with the Hanley-McNeil interval; ``nan`` when
    either side is empty. ``n``: positives + negatives."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    n = int(len(pos) + len(neg))
    if not len(pos) or not len(neg):
        return nan_estimate(n)
    ranks = sps.rankdata(np.concatenate([pos, neg]))
    a = float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (len(pos) - 1) * (q1 - a * a) + (len(neg) - 1) * (q2 - a * a)) / (
        len(pos) * len(neg))
    half = _z(confidence) * math.sqrt(max(var, 0.0))
    return Estimate(value=a, ci_low=max(0.0, a - half), ci_high=min(1.0, a + half), n=n)


def clopper_pearson_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Proportion ``successes / n`` with the exact (Clopper–Pearson) interval."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return nan_estimate(0)
    ci = sps.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="exact")
    return Estimate(value=successes / n, ci_low=float(ci.low), ci_high=float(ci.high), n=n)


def paired_difference(
    both: int, only_a: int, only_b: int, neither: int, confidence: float = 0.95
) -> Estimate:
    """Difference ``p_b - p_a`` of two proportions measured on the same items, with
    Newcombe's hybrid score interval for paired data (Newcombe 1998, method 10).

    ``both``/``only_a``/``only_b``/``neither`` count items where the property holds under
    both, only A, only B, neither. ``p_a = (both + only_a) / n``, ``p_b = (both + only_b) / n``.
    The interval combines the two Wilson intervals ("square and add"), corrected by the
    correlation phi of the paired 2×2 table with Newcombe's continuity correction:
    with ``A = both * neither - only_a * only_b``, phi = ``(A - n/2) / sqrt(margins)`` if
    ``A > n/2``, 0 if ``0 <= A <= n/2`` or a margin is empty, ``A / sqrt(margins)`` if ``A < 0``.
    """
    n = both + only_a + only_b + neither
    if n == 0:
        return nan_estimate(0)
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    la, ua = wilson_bounds(p_a, n, confidence)
    lb, ub = wilson_bounds(p_b, n, confidence)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    cross = both * neither - only_a * only_b
    if not margins or 0 <= cross <= n / 2:
        phi = 0.0
    elif cross > n / 2:
        phi = (cross - n / 2) / math.sqrt(margins)
    else:
        phi = cross / math.sqrt(margins)
    d = p_b - p_a
    delta = math.sqrt(max(0.0, (p_b - lb) ** 2 - 2 * phi * (p_b - lb) * (ua - p_a)
                          + (ua - p_a) ** 2))
    epsilon = math.sqrt(max(0.0, (ub - p_b) ** 2 - 2 * phi * (ub - p_b) * (p_a - la)
                            + (p_a - la) ** 2))
    return Estimate(value=d, ci_low=max(-1.0, d - delta), ci_high=min(1.0, d + epsilon), n=n)


# --------------------------------------------------------------------------- paired tests


def mcnemar(only_a: int, only_b: int, *, exact: bool | None = None) -> SignificanceResult:
    """McNemar's test of a paired 2×2 table from its discordant counts.

    ``only_a`` = items positive under A only, ``only_b`` = positive under B only.
    With ``exact=None`` the exact two-sided binomial test is used when
    ``only_a + only_b < MCNEMAR_EXACT_BELOW`` (25) and the chi-square test with continuity
    correction, ``(|b - c| - 1)**2 / (b + c)`` on 1 df, otherwise. The exact test reports the
    smaller discordant count as its statistic. No discordant items gives p = 1.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be non-negative")
    m = only_a + only_b
    use_exact = m < MCNEMAR_EXACT_BELOW if exact is None else exact
    if use_exact:
        k = min(only_a, only_b)
        p = 1.0 if m == 0 else min(1.0, 2.0 * float(sps.binom.cdf(k, m, 0.5)))
        return SignificanceResult(statistic=float(k), p_value=p, df=None,
                                  method="exact binomial (two-sided)")
    if m == 0:
        return SignificanceResult(statistic=NAN, p_value=NAN, df=1,
                                  method="chi-square, continuity-corrected",
                                  note="no discordant items: chi-square undefined")
    statistic = (abs(only_a - only_b) - 1) ** 2 / m
    return SignificanceResult(statistic=statistic, p_value=float(sps.chi2.sf(statistic, 1)),
                              df=1, method="chi-square, continuity-corrected")


def stuart_maxwell(table: np.ndarray) -> SignificanceResult:
    """Stuart–Maxwell test of marginal homogeneity of a square k×k paired table.

    ``d_i = row_i - col_i``; ``S_ii = row_i + col_i - 2 n_ii``, ``S_ij = -(n_ij + n_ji)``;
    statistic ``d' S^+ d`` on ``rank(S)`` df. ``S`` always has rank <= k-1 (its rows sum to
    0); using the Moore–Penrose pseudo-inverse of the full ``S`` equals the textbook
    "drop one category and invert" statistic when ``rank(S) = k-1`` and stays defined when
    categories are unused or never change (they drop out of the rank). With no off-diagonal
    items the marginals are identical and p = 1.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError(f"Stuart–Maxwell needs a square table, got shape {table.shape}")
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    d = rows - cols
    s = -(table + table.T)
    np.fill_diagonal(s, rows + cols - 2 * np.diag(table))
    rank = int(np.linalg.matrix_rank(s)) if s.any() else 0
    method = "Stuart–Maxwell (pseudo-inverse of the marginal-difference covariance)"
    if rank == 0:
        return SignificanceResult(statistic=0.0, p_value=1.0, df=0, method=method,
                                  note="no off-diagonal items: marginals are identical")
    statistic = float(d @ np.linalg.pinv(s) @ d)
    note = None
    if rank < table.shape[0] - 1:
        note = f"covariance rank {rank} < k-1 = {table.shape[0] - 1}; df reduced to {rank}"
    return SignificanceResult(statistic=statistic, p_value=float(sps.chi2.sf(statistic, rank)),
                              df=rank, method=method, note=note)


def bowker(table: np.ndarray) -> SignificanceResult:
    """Bowker's test of symmetry of a square paired table:
    ``sum over i<j of (n_ij - n_ji)**2 / (n_ij + n_ji)`` on as many df as pairs with
    ``n_ij + n_ji > 0`` (pairs never observed carry no information and are left out).
    With no such pair the table is symmetric and p = 1."""
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError(f"Bowker needs a square table, got shape {table.shape}")
    statistic, df = 0.0, 0
    k = table.shape[0]
    for i in range(k):
        for j in range(i + 1, k):
            total = table[i, j] + table[j, i]
            if total > 0:
                statistic += (table[i, j] - table[j, i]) ** 2 / total
                df += 1
    method = "Bowker symmetry (chi-square)"
    if df == 0:
        return SignificanceResult(statistic=0.0, p_value=1.0, df=0, method=method,
                                  note="no off-diagonal items: the table is symmetric")
    return SignificanceResult(statistic=statistic, p_value=float(sps.chi2.sf(statistic, df)),
                              df=df, method=method)


# --------------------------------------------------------------------------- Krippendorff


def _coincidences(units: Sequence[Sequence[Hashable | None]]) -> tuple[np.ndarray, int]:
    """Per-unit coincidence matrices ``(U, k, k)`` of the pairable units (2+ values)."""
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [u for u in pairable if len(u) >= 2]
    categories = list(dict.fromkeys(v for u in pairable for v in u))
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    out = np.zeros((len(pairable), k, k))
    for u, values in enumerate(pairable):
        counts = np.bincount([index[v] for v in values], minlength=k).astype(float)
        # ordered pairs of different coders: n_c * n_k off the diagonal, n_c*(n_c-1) on it
        out[u] = (np.outer(counts, counts) - np.diag(counts)) / (len(values) - 1)
    return out, len(pairable)


def _alpha_from_coincidences(o: np.ndarray) -> np.ndarray:
    """Nominal alpha ``1 - (n - 1) * sum_{c!=k} o_ck / sum_{c!=k} n_c n_k`` (stackable)."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    observed = o.sum(axis=(-2, -1)) - np.einsum("...ii->...", o)
    expected = n * n - (n_c * n_c).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / np.where(expected > 0,
                        expected, 1), np.nan)


def krippendorff_alpha(
    units: Sequence[Sequence[Hashable | None]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> Estimate:
    """Krippendorff's alpha for nominal data, any number of annotators, missing values allowed.

    ``units`` holds, per item, the values the annotators gave (``None`` = missing; the
    position is not needed for nominal alpha). Items with fewer than two values are not
    pairable and are left out; ``n`` is the number of pairable items. ``nan`` when fewer than
    two values or a single category overall. The interval is a seeded percentile bootstrap
    over items.
    """
    per_unit, n_units = _coincidences(units)
    if n_units == 0:
        return nan_estimate(0)
    value = float(_alpha_from_coincidences(per_unit.sum(axis=0)))
    if not math.isfinite(value):
        return nan_estimate(n_units)
    low, high = NAN, NAN
    if n_units >= 2 and n_resamples > 0:
        # items with the same coincidence matrix are interchangeable: resample their counts
        patterns, counts = np.unique(per_unit.reshape(n_units, -1), axis=0, return_counts=True)
        patterns = patterns.reshape(-1, *per_unit.shape[1:])
        rng = np.random.default_rng(seed)
        multiplicity = rng.multinomial(n_units, counts / n_units, size=n_resamples)
        stacked = np.einsum("bu,ukl->bkl", multiplicity, patterns)
        values = _alpha_from_coincidences(stacked)
        defined = values[np.isfinite(values)]
        if defined.size >= MIN_DEFINED_SHARE * n_resamples:
            alpha = 1 - confidence
            low, high = (float(x) for x in np.quantile(defined, [alpha / 2, 1 - alpha / 2]))
    return Estimate(value=value, ci_low=low, ci_high=high, n=n_units)
