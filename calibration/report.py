"""The calibration report: the judge measured against human gold labels.

Input is plain data, one :class:`CalibrationItem` per claim that has a gold label. Nothing is
averaged into one score: the report keeps the confusion table, accuracy, balanced accuracy,
kappa, the direction of error (lenient / strict, per label and subtype), what the review
queue catches (``queue_recall``) and costs (``queue_load``), judge errors and refusals, each
rate with its ``n`` and interval. Design-weighted estimates (stratified review sample) are in
``weighted``; per-dataset figures in ``per_dataset``.

Agreement between people is a separate figure (:func:`human_agreement`), never mixed with
judge–human agreement; an annotator labelling the same claim twice is self-agreement and is
reported apart from inter-annotator agreement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from calibration.direction import error_direction
from calibration.labels import (
    JUDGE_ERROR,
    JUDGE_LABELS,
    LABELS,
    SUPPORTED,
    UNSPECIFIED,
    one_of,
)
from calibration.results import Estimate, ResultModel
from calibration.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    LabelMetrics,
    accuracy,
    balanced_accuracy,
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    per_label_metrics,
    wilson_interval,
)
from calibration.weighting import (
    SamplingDesign,
    WeightedEstimate,
    sampling_design,
    weighted_rate,
    weighted_shares,
)

# --------------------------------------------------------------------------- input


class CalibrationItem(BaseModel):
    """One claim with a human gold label and the judge's label for it.

    ``judge_label`` is one of the four labels or ``"judge_error"``. ``in_queue`` says whether
    the review queue sends the claim to people. ``weight`` is ``stratum size / sample size``
    of the claim's stratum (1 when the stratum is fully labelled or there is no sampling).
    """

    claim_id: str
    gold_label: str
    gold_subtype: str | None = None
    judge_label: str
    judge_subtype: str | None = None
    in_queue: bool
    #: where the claim comes in the queue's reading order among the calibrated claims
    #: (1 = read first); None when it is not in the queue or the order is not known
    queue_position: int | None = None
    #: the judge's probability that the claim is supported, when it gives one
    support: float | None = None
    #: whether the queue takes the claim for a reason other than a low ``support`` (a label
    #: other than supported, a failed check, a judge error ...); None when not known
    flagged: bool | None = None
    weight: float = 1.0
    stratum: str | None = None
    dataset: str | None = None

    @field_validator("gold_label")
    @classmethod
    def _gold_is_a_label(cls, value: str) -> str:
        return one_of(value, LABELS, "gold_label")

    @field_validator("judge_label")
    @classmethod
    def _judge_is_a_label(cls, value: str) -> str:
        return one_of(value, JUDGE_LABELS, "judge_label")

    @field_validator("weight")
    @classmethod
    def _weight_at_least_one(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(f"weight {value} < 1: a labelled claim stands for at least itself")
        return value


class HumanLabel(BaseModel):
    """One gold label given by one annotator to one claim."""

    claim_id: str
    annotator: str
    label: str

    @field_validator("label")
    @classmethod
    def _is_a_label(cls, value: str) -> str:
        return one_of(value, LABELS, "label")


# --------------------------------------------------------------------------- output


class QueuePoint(ResultModel):
    """The review queue at one ``review_support_below`` threshold (see ``Figures``)."""

    review_support_below: float
    recall: Estimate
    false_alarm: Estimate
    load: Estimate


class Figures(ResultModel):
    """The core judge-versus-gold figures of one set of claims (unweighted).

    ``confusion[gold][judge]`` counts claims; the judge axis includes ``judge_error``.
    ``per_subtype`` is the lenient rate per gold subtype; ``subtype_agreement`` the share of
    claims where gold and judge both give a subtype and they are the same. ``queue_recall``:
    of gold non-supported claims, the share the queue sends to people; ``queue_load``: the
    share of all claims it sends; ``queue_false_alarm``: of gold-supported claims, the share
    it sends (review spent on claims that were fine). Recall and false-alarm rate do not
    depend on the label mix, so the load at any hallucination rate ``p`` follows:
    ``p * queue_recall + (1 - p) * queue_false_alarm`` (:func:`projected_load`).
    ``queue_points``: the queue's recall, false-alarm rate and load if supported claims with
    a ``support`` below each threshold of :data:`SUPPORT_THRESHOLDS` were queued (the
    ``review_support_below`` setting), the rest of the queue unchanged; empty when the items
    carry no ``support`` / ``flagged``.
    ``queue_budget``: when people read only the first share of claims (key ``"25%"``,
    ``"50%"``: that share of all claims, rounded up) in the queue's reading order, the share
    of gold non-supported claims they meet; empty when the items carry no queue positions.
    """

    n: int
    confusion: dict[str, dict[str, int]]
    accuracy: Estimate
    balanced_accuracy: Estimate
    kappa: Estimate
    lenient_rate: Estimate
    strict_rate: Estimate
    lenient_by_label: dict[str, Estimate]
    per_label: dict[str, LabelMetrics]
    per_subtype: dict[str, Estimate]
    subtype_agreement: Estimate
    queue_recall: Estimate
    queue_load: Estimate
    queue_false_alarm: Estimate
    queue_budget: dict[str, Estimate] = {}
    queue_points: list[QueuePoint] = []
    judge_errors: int
    judge_errors_by_gold_label: dict[str, int]


class WeightedFigures(ResultModel):
    """Design-weighted population estimates (see :mod:`calibration.weighting`)."""

    design: SamplingDesign
    gold_label_shares: dict[str, WeightedEstimate]
    accuracy: WeightedEstimate
    lenient_rate: WeightedEstimate
    strict_rate: WeightedEstimate
    queue_recall: WeightedEstimate
    queue_load: WeightedEstimate


class PairAgreement(ResultModel):
    """Agreement of two different annotators on the claims both labelled."""

    annotator_a: str
    annotator_b: str
    kappa: Estimate
    agreement: Estimate


class SelfAgreement(ResultModel):
    """One annotator labelling the same claims more than once: ``agreement`` is the share of
    such claims where every repeat equals the first label; ``kappa`` compares the first and
    second label."""

    annotator: str
    agreement: Estimate
    kappa: Estimate


class HumanAgreement(ResultModel):
    """Agreement between people, reported apart from judge–human agreement.

    ``method`` is ``"cohen_kappa"`` with exactly two annotators and ``"krippendorff_alpha"``
    with more; ``value`` is that figure. For inter-annotator figures each annotator's *first*
    label of a claim is used (input order); repeats by the same annotator only enter
    ``self_agreement``. ``n_items`` counts claims labelled by at least two annotators.
    """

    n_items: int
    annotators: list[str]
    method: Literal["cohen_kappa", "krippendorff_alpha"]
    value: Estimate
    krippendorff_alpha: Estimate
    pairwise: list[PairAgreement]
    self_agreement: list[SelfAgreement]
    notes: list[str]


class CalibrationReport(Figures):
    """Judge versus gold for one judge version, with weighted and per-dataset figures.

    ``weighted`` is ``None`` when every weight is 1 and no stratum sizes were given.
    ``per_dataset`` is empty unless the items come from more than one dataset.
    ``declined`` counts claims annotators declined to label (not in any other figure).
    """

    judge_version: str
    declined: int
    weighted: WeightedFigures | None
    per_dataset: dict[str, Figures]
    human_agreement: HumanAgreement | None
    confidence: float
    bootstrap_seed: int
    bootstrap_resamples: int
    notes: list[str]


# --------------------------------------------------------------------------- building


def _figures(
    items: Sequence[CalibrationItem], seed: int, n_resamples: int, confidence: float
) -> dict[str, Any]:
    gold = [i.gold_label for i in items]
    judged = [i.judge_label for i in items]
    table = confusion_matrix(gold, judged)
    direction = error_direction(
        gold, judged, gold_subtypes=[i.gold_subtype for i in items], confidence=confidence
    )
    both_subtyped = [
        i for i in items
        if i.gold_label != SUPPORTED and i.judge_label not in (SUPPORTED, JUDGE_ERROR)
        and i.gold_subtype and i.judge_subtype
    ]
    not_supported = [i for i in items if i.gold_label != SUPPORTED]
    return dict(
        n=len(items),
        confusion={
            g: {j: int(table[r, c]) for c, j in enumerate(JUDGE_LABELS)}
            for r, g in enumerate(LABELS)
        },
        accuracy=accuracy(gold, judged, confidence),
        balanced_accuracy=balanced_accuracy(
            gold, judged, n_resamples=n_resamples, seed=seed, confidence=confidence
        ),
        kappa=cohen_kappa(gold, judged, n_resamples=n_resamples, seed=seed,
                          confidence=confidence),
        lenient_rate=direction.lenient,
        strict_rate=direction.strict,
        lenient_by_label=direction.lenient_by_label,
        per_label=per_label_metrics(gold, judged, confidence=confidence),
        per_subtype=direction.lenient_by_subtype,
        subtype_agreement=wilson_interval(
            sum(i.gold_subtype == i.judge_subtype for i in both_subtyped),
            len(both_subtyped), confidence,
        ),
        queue_recall=wilson_interval(
            sum(i.in_queue for i in not_supported), len(not_supported), confidence
        ),
        queue_load=wilson_interval(sum(i.in_queue for i in items), len(items), confidence),
        queue_false_alarm=wilson_interval(
            sum(i.in_queue for i in items if i.gold_label == SUPPORTED),
            sum(i.gold_label == SUPPORTED for i in items), confidence,
        ),
        queue_budget=queue_budget(items, confidence),
        queue_points=queue_points(items, confidence),
        judge_errors=direction.judge_errors,
        judge_errors_by_gold_label=direction.judge_errors_by_gold_label,
    )


#: Shares of all claims people may read, for ``Figures.queue_budget``.
BUDGETS: tuple[float, ...] = (0.25, 0.5)


def queue_budget(items: Sequence[CalibrationItem], confidence: float = 0.95
                 ) -> dict[str, Estimate]:
    """Of the gold non-supported claims, the share among the first ``ceil(b * n)`` claims of
    the queue's reading order, for each budget ``b`` in :data:`BUDGETS` (see ``Figures``)."""
    if not any(i.queue_position is not None for i in items):
        return {}
    order = sorted((i for i in items if i.queue_position is not None),
                   key=lambda i: i.queue_position)  # type: ignore[arg-type, return-value]
    rejected = sum(i.gold_label != SUPPORTED for i in items)
    out = {}
    for budget in BUDGETS:
        read = order[:math.ceil(budget * len(items) - 1e-9)]
        out[f"{budget:.0%}"] = wilson_interval(
            sum(i.gold_label != SUPPORTED for i in read), rejected, confidence)
    return out


#: ``review_support_below`` values for ``Figures.queue_points``.
SUPPORT_THRESHOLDS: tuple[float, ...] = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def queue_points(items: Sequence[CalibrationItem], confidence: float = 0.95
                 ) -> list[QueuePoint]:
    """The queue at each of :data:`SUPPORT_THRESHOLDS` (see ``Figures``)."""
    if not items or any(i.flagged is None for i in items) or all(
            i.support is None for i in items):
        return []
    rejected = [i.gold_label != SUPPORTED for i in items]
    out = []
    for t in SUPPORT_THRESHOLDS:
        queued = [bool(i.flagged) or (i.support is not None and i.support < t) for i in items]
        out.append(QueuePoint(
            review_support_below=t,
            recall=wilson_interval(sum(q for q, r in zip(queued, rejected, strict=True) if r),
                                   sum(rejected), confidence),
            false_alarm=wilson_interval(
                sum(q for q, r in zip(queued, rejected, strict=True) if not r),
                len(items) - sum(rejected), confidence),
            load=wilson_interval(sum(queued), len(items), confidence),
        ))
    return out


def projected_load(queue_recall: float, queue_false_alarm: float, rejected_share: float) -> float:
    """Share of all claims the queue would send to people where ``rejected_share`` of the
    claims are gold non-supported (recall and false-alarm rate held as measured)."""
    if not 0.0 <= rejected_share <= 1.0:
        raise ValueError("rejected_share must be between 0 and 1")
    return rejected_share * queue_recall + (1.0 - rejected_share) * queue_false_alarm


def max_share_for_load(
    queue_recall: float, queue_false_alarm: float, load: float = 0.5
) -> float | None:
    """The largest share of gold non-supported claims at which the queue sends at most
    ``load`` of all claims (recall and false-alarm rate held as measured); None when no
    share does."""
    if queue_recall < queue_false_alarm:  # the load falls as the share grows
        return 1.0 if queue_recall <= load else None
    if queue_false_alarm > load:
        return None
    if queue_recall <= load:
        return 1.0
    return (load - queue_false_alarm) / (queue_recall - queue_false_alarm)


def figures(
    items: Sequence[CalibrationItem],
    *,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> Figures:
    """The core unweighted figures of a set of items (used per dataset and overall)."""
    return Figures(**_figures(items, seed, n_resamples, confidence))


def weighted_figures(
    items: Sequence[CalibrationItem],
    *,
    population: Mapping[str, int] | None = None,
    confidence: float = 0.95,
) -> WeightedFigures:
    """Design-weighted estimates from the items' strata and weights (see
    :func:`calibration.weighting.sampling_design` for ``population``)."""
    strata = [i.stratum for i in items]
    design = sampling_design(strata, [i.weight for i in items], population=population)
    gold_supported = [i.gold_label == SUPPORTED for i in items]
    not_supported = [not s for s in gold_supported]

    def rate(hits: Sequence[bool], domain: Sequence[bool] | None = None) -> WeightedEstimate:
        return weighted_rate(hits, strata, design, domain=domain, confidence=confidence)

    return WeightedFigures(
        design=design,
        gold_label_shares=weighted_shares(
            [i.gold_label for i in items], strata, design, categories=LABELS,
            confidence=confidence,
        ),
        accuracy=rate([i.gold_label == i.judge_label for i in items]),
        lenient_rate=rate([i.judge_label == SUPPORTED for i in items], not_supported),
        strict_rate=rate([i.judge_label != SUPPORTED for i in items], gold_supported),
        queue_recall=rate([i.in_queue for i in items], not_supported),
        queue_load=rate([i.in_queue for i in items]),
    )


def build_calibration_report(
    items: Sequence[CalibrationItem],
    *,
    judge_version: str,
    declined: int = 0,
    population: Mapping[str, int] | None = None,
    human_labels: Sequence[HumanLabel] | None = None,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> CalibrationReport:
    """Build the calibration report of one judge version.

    ``items``: one per gold-labelled claim (claim ids must be unique). ``declined``: claims
    annotators declined to label. ``population``: stratum name → number of claims in the
    stratum, to declare strata sizes and strata that were not sampled at all.
    ``human_labels``: per-annotator labels, for the separate human-agreement section.
    Bootstrap intervals use ``seed`` and ``n_resamples`` (recorded in the report).
    """
    seen: set[str] = set()
    for item in items:
        if item.claim_id in seen:
            raise ValueError(f"claim {item.claim_id!r} appears twice")
        seen.add(item.claim_id)
    if declined < 0:
        raise ValueError("declined must be non-negative")
    notes: list[str] = []
    silent_errors = sum(1 for i in items if i.judge_label == JUDGE_ERROR and not i.in_queue)
    if silent_errors:
        notes.append(
            f"{silent_errors} judge error(s) were not in the review queue: fail-closed violated"
        )
    weighted = None
    if population or any(i.weight != 1 for i in items):
        weighted = weighted_figures(items, population=population, confidence=confidence)
    datasets: dict[str, list[CalibrationItem]] = {}
    for item in items:
        datasets.setdefault(item.dataset or UNSPECIFIED, []).append(item)
    per_dataset = {}
    if len(datasets) > 1:
        per_dataset = {
            name: figures(group, seed=seed, n_resamples=n_resamples, confidence=confidence)
            for name, group in sorted(datasets.items())
        }
    agreement = None
    if human_labels:
        agreement = human_agreement(
            human_labels, seed=seed, n_resamples=n_resamples, confidence=confidence
        )
    return CalibrationReport(
        **_figures(items, seed, n_resamples, confidence),
        judge_version=judge_version,
        declined=declined,
        weighted=weighted,
        per_dataset=per_dataset,
        human_agreement=agreement,
        confidence=confidence,
        bootstrap_seed=seed,
        bootstrap_resamples=n_resamples,
        notes=notes,
    )


# --------------------------------------------------------------------------- people


def human_agreement(
    labels: Sequence[HumanLabel],
    *,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> HumanAgreement:
    """Agreement between annotators on the same claims, and each annotator with themself.

    Two annotators: Cohen's kappa on the claims both labelled. More: Krippendorff's alpha
    (nominal, missing values allowed). Pairwise kappas are always listed. When an annotator
    labelled a claim more than once, only the first label counts between people; the repeats
    are self-agreement and are reported apart, with a note.
    """
    first: dict[str, dict[str, str]] = {}  # claim -> annotator -> first label
    repeats: dict[str, dict[str, list[str]]] = {}  # annotator -> claim -> all labels
    for item in labels:
        by_annotator = first.setdefault(item.claim_id, {})
        if item.annotator in by_annotator:
            history = repeats.setdefault(item.annotator, {}).setdefault(
                item.claim_id, [by_annotator[item.annotator]]
            )
            history.append(item.label)
        else:
            by_annotator[item.annotator] = item.label
    annotators = sorted({a for per_claim in first.values() for a in per_claim})
    shared = {c: per for c, per in first.items() if len(per) >= 2}
    notes: list[str] = []
    single = len(first) - len(shared)
    if single:
        notes.append(f"{single} claim(s) labelled by one annotator only: not in agreement")
    for annotator, claims in sorted(repeats.items()):
        notes.append(
            f"annotator {annotator!r} labelled {len(claims)} claim(s) more than once: that is "
            "self-agreement, not inter-annotator agreement; only the first label is used "
            "between annotators"
        )
    boot: dict[str, Any] = dict(seed=seed, n_resamples=n_resamples, confidence=confidence)
    alpha = krippendorff_alpha(
        [[per.get(a) for a in annotators] for per in shared.values()], **boot
    )
    pairwise = []
    for a, b in combinations(annotators, 2):
        both = [per for per in shared.values() if a in per and b in per]
        if not both:
            continue
        la, lb = [per[a] for per in both], [per[b] for per in both]
        pairwise.append(PairAgreement(
            annotator_a=a, annotator_b=b, kappa=cohen_kappa(la, lb, **boot),
            agreement=wilson_interval(sum(x == y for x, y in zip(la, lb, strict=True)),
                                      len(both), confidence),
        ))
    self_agreement = []
    for annotator, claims in sorted(repeats.items()):
        histories = list(claims.values())
        self_agreement.append(SelfAgreement(
            annotator=annotator,
            agreement=wilson_interval(sum(len(set(h)) == 1 for h in histories),
                                      len(histories), confidence),
            kappa=cohen_kappa([h[0] for h in histories], [h[1] for h in histories], **boot),
        ))
    method: Literal["cohen_kappa", "krippendorff_alpha"]
    if len(annotators) == 2 and pairwise:
        method, value = "cohen_kappa", pairwise[0].kappa
    else:
        method, value = "krippendorff_alpha", alpha
    return HumanAgreement(
        n_items=len(shared), annotators=annotators, method=method, value=value,
        krippendorff_alpha=alpha, pairwise=pairwise, self_agreement=self_agreement, notes=notes,
    )
