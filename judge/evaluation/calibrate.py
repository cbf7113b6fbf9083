"""Calibration of one judge version against human gold: the provenance rules and the self-grading
ban (no override), the zero-tolerance validity gate, and the report with the review-queue view,
refused answers and the gold items no verdict was found for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calibration import (
    CalibrationItem,
    CalibrationReport,
    HumanLabel,
    build_calibration_report,
)
from judge.config.review import ReviewSettings
from judge.evaluation import CalibrationRefused, EvaluationError
from judge.evaluation.gold import GoldEntry, GoldFile
from judge.evaluation.matching import ClaimRef, Matching, StoreIndex, gold_to_records, match_gold
from judge.models.identity import normalize_model, self_grading_reason
from judge.review.queue import (
    DEFAULT_PRIORITY,
    claim_reasons,
    classify,
    reading_positions,
)
from judge.review.triage import PointFinder, forced
from judge.store import Store

# --------------------------------------------------------------------------- provenance


def check_provenance(index: StoreIndex, matching: Matching, entries: Sequence[GoldEntry]) -> None:
    """Raise :class:`CalibrationRefused` when the report would grade a model with its own
    answers, or when a gold annotator id names a model. There is no way around it."""
    model = index.models.get(matching.judge_version)
    if model is None:
        raise EvaluationError(f"judge version {matching.judge_version!r} is not in the store")
    problems: list[str] = []
    for m in matching.matched:
        generators = {index.generators.get(m.row["answer_id"]), m.entry.item.generator}
        for generator in sorted(g for g in generators if g):
            reason = self_grading_reason(generator, model)
            if reason:
                problems.append(f"gold line {m.entry.line} ({m.entry.item.id}), answer "
                                f"{m.row['answer_id']}: {reason}")
                break
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10
                                 else [])
        raise CalibrationRefused(
            f"refused: judge {matching.judge_version} (model {model!r}) would be graded on "
            f"answers its own model family generated ({len(problems)} gold claim(s)). A model "
            "never grades its own answers and there is no option to allow it; calibrate a "
            "judge of another family, or remove those items from the gold file.\n"
            + "\n".join(shown)
        )
    model_names = {normalize_model(n) for n in index.models.values() if n}
    model_names |= {normalize_model(g) for g in index.generators.values() if g}
    model_names |= {normalize_model(e.item.generator) for e in entries if e.item.generator}
    model_names.discard("")
    named = []
    for e in entries:
        for where, who in e.item.annotators():
            person = who.split(":", 1)[1] if ":" in who else who
            if normalize_model(person) in model_names:
                named.append(f"gold line {e.line} ({e.item.id}): {where} {who!r} names a model "
                             "seen in this store or gold file")
    if named:
        raise CalibrationRefused(
            "refused: gold labels must be a person's, and these annotator ids name models; "
            "labels written by a model never count as gold.\n" + "\n".join(named[:10]))


# --------------------------------------------------------------------------- calibration


@dataclass
class CalibrationOutcome:
    report: CalibrationReport
    matching: Matching
    model: str
    gate: dict[str, Any]
    gold: dict[str, Any]
    #: the judge version's configured threshold (``queue_points`` show the others)
    review_support_below: float | None = None
    #: the operating points that decided ``in_queue`` (:mod:`judge.review.triage`)
    operating_points: list[dict[str, Any]] | None = None
    #: what the reviews of the newest queue of this version say of its recall
    #: (:func:`judge.review.triage.recall_watch`)
    recall_watch: dict[str, Any] | None = None
    #: what reviewers would get from a queue over these claims, in parts
    #: (:func:`judge.review.design.load_parts`, with the ``[review]`` settings)
    load_parts: dict[str, int] | None = None

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [m.row for m in self.matching.matched]


def validity_gate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The zero-tolerance layer, kept apart from agreement rates (gates are layered, never
    averaged into one score: a rate can hide an invalid output, a gate cannot). ``schema``:
    the judge returned no valid structured output (``judge_error``). ``evidence``: the judge's
    evidence names a source that does not exist or quotes text that is not in it. Both must be
    0 to pass. Answer citations that do not resolve are the answer's problem, not the judge's:
    counted for information."""
    schema = [r for r in rows if r["label"] == "judge_error"]
    evidence = [r for r in rows if any(
        c["outcome"] == "fail" and str(c["target"]).startswith("evidence[")
        and c["name"] in ("citation_exists", "quote_found", "json_path_resolves")
        for c in r["checks"])]
    answer = [r for r in rows if any(
        c["outcome"] == "fail" and str(c["target"]).startswith("citation[")
        and c["name"] in ("citation_exists", "quote_found", "json_path_resolves")
        for c in r["checks"])]
    n = len(rows)
    return {
        "n": n,
        "schema": {"failures": len(schema), "passed": not schema,
                   "claim_ids": [r["claim_id"] for r in schema][:50]},
        "evidence": {"failures": len(evidence), "passed": not evidence,
                     "claim_ids": [r["claim_id"] for r in evidence][:50]},
        "passed": not schema and not evidence,
        "answer_citation_failures": len(answer),
    }


def calibration_items(
    matching: Matching, point_of: PointFinder | None = None,
) -> tuple[list[CalibrationItem], list[HumanLabel], dict[str, int], list[str]]:
    """Calibration items, people's labels (when some claim has two), stratum sizes, notes.
    A claim is in the queue as a queue over it would take it: by its operating point
    (``point_of``), else by the verdict's own review flag."""
    items: list[CalibrationItem] = []
    labels: dict[str, list[tuple[str, str]]] = {}
    population: dict[str, int] = {}
    notes: list[str] = []
    # the default queue's reading order over these claims, for the budget figures
    positions = reading_positions([m.row for m in matching.matched], point_of=point_of)
    rank = {name: i for i, name in enumerate(DEFAULT_PRIORITY)}
    for m in matching.matched:
        gold, row = m.entry.item, m.row
        point = point_of(row) if point_of is not None else None
        reasons = claim_reasons(row)
        in_queue = bool(row["review"])
        flagged = any(r != "doubtful_support" for r in reasons)
        if point is not None and point.threshold is not None and row.get("support") is not None:
            in_queue = classify(row, rank, point)[1] != "passed"
            flagged = forced(row["label"], reasons)
        items.append(CalibrationItem(
            claim_id=row["claim_id"], gold_label=gold.label, gold_subtype=gold.subtype,
            judge_label=row["label"], judge_subtype=row["subtype"], in_queue=in_queue,
            queue_position=positions.get(row["claim_id"]), support=row.get("support"),
            flagged=flagged,
            weight=gold.sampled_weight, stratum=gold.stratum, dataset=gold.dataset,
        ))
        labels[row["claim_id"]] = list(gold.person_labels())
        if gold.stratum and gold.stratum_size:
            known = population.setdefault(gold.stratum, gold.stratum_size)
            if known != gold.stratum_size:
                raise EvaluationError(
                    f"gold line {m.entry.line}: stratum {gold.stratum!r} has size "
                    f"{gold.stratum_size} here and {known} elsewhere")
    for entry, claim in matching.duplicates:
        labels.setdefault(claim, []).extend(entry.item.person_labels())
    if matching.duplicates:
        notes.append(f"{len(matching.duplicates)} gold item(s) label a claim an earlier item "
                     "already labels: the first label is the gold label, the others count only "
                     "for agreement between people")
    human: list[HumanLabel] = []
    if any(len(v) > 1 for v in labels.values()):
        human = [HumanLabel(claim_id=c, annotator=a, label=lab)
                 for c, pairs in labels.items() for a, lab in pairs]
    return items, human, population, notes


def calibrate(
    store: Store,
    gold: GoldFile,
    judge_version: str | None = None,
    *,
    entries: Sequence[GoldEntry] | None = None,
    refs: dict[str, ClaimRef] | None = None,
    restrict: set[str] | None = None,
    index: StoreIndex | None = None,
    n_resamples: int | None = None,
    review: ReviewSettings | None = None,
) -> CalibrationOutcome:
    """The calibration report of one judge version against a (validated) gold file. The
    queue figures follow the version's operating point for ``review``'s target recall
    (:mod:`judge.review.triage`)."""
    entries = list(gold.entries if entries is None else entries)
    index = index or StoreIndex(store)
    matching = matched_gold(store, gold, judge_version, entries=entries, refs=refs,
                            restrict=restrict, index=index)
    judge_version = matching.judge_version
    review = review or ReviewSettings()
    point_of = PointFinder(store, review)
    items, human, population, notes = calibration_items(matching, point_of)
    kwargs: dict[str, Any] = {}
    if n_resamples is not None:
        kwargs["n_resamples"] = n_resamples
    report = build_calibration_report(
        items, judge_version=judge_version, population=population or None,
        human_labels=human or None, **kwargs)
    if matching.refused:
        notes.append(f"{len(matching.refused)} gold claim(s) belong to answers the judge refused "
                     "to grade (self-grading ban): not judged, in no rate")
    if matching.not_judged:
        notes.append(f"{len(matching.not_judged)} gold item(s) have no verdict by this judge "
                     "version: in no rate")
    if matching.ambiguous:
        notes.append(f"{matching.ambiguous} gold item(s) matched more than one stored claim by "
                     "text and sources; the first (by answer id) was used")
    if notes:
        report = report.model_copy(update={"notes": [*report.notes, *notes]})
    gate = validity_gate([m.row for m in matching.matched])
    return CalibrationOutcome(
        review_support_below=index.configs[judge_version].get("review_support_below"),
        report=report, matching=matching, model=index.models[judge_version], gate=gate,
        operating_points=point_of.used(), recall_watch=_watch(store, judge_version),
        gold=gold_summary(gold, len(entries), matching),
        load_parts=_load_parts(items, review),
    )


def _load_parts(items: Sequence[CalibrationItem], review: ReviewSettings) -> dict[str, int]:
    """A queue over these claims with the ``[review]`` settings (and the queue's default
    sample), in parts: the claims the operating point flags, then what comes on top."""
    from judge.review.design import load_parts
    from judge.review.queue import QueueOptions

    flagged = sum(bool(i.in_queue) for i in items)
    options = QueueOptions(target_recall=review.target_recall, confidence=review.confidence,
                           informative_share=review.informative_share)
    return load_parts(flagged, len(items) - flagged, options)


def gold_summary(gold: GoldFile, items: int, matching: Matching) -> dict[str, Any]:
    """The gold file a report rests on: its path, hash, items and how they matched."""
    return {"file": str(gold.path), "sha256": gold.sha256, "items": items,
            "matched": len(matching.matched),
            "matched_by": {how: sum(1 for m in matching.matched if m.how == how)
                           for how in ("eval", "claim_id", "text")},
            "duplicates": len(matching.duplicates)}


def matched_gold(
    store: Store,
    gold: GoldFile,
    judge_version: str | None = None,
    *,
    entries: Sequence[GoldEntry] | None = None,
    refs: dict[str, ClaimRef] | None = None,
    restrict: set[str] | None = None,
    index: StoreIndex | None = None,
) -> Matching:
    """The gold items matched to the stored verdicts of ``judge_version`` (default: the one
    version that judged them), after the provenance rules (:func:`check_provenance`); an
    error when none matches."""
    entries = list(gold.entries if entries is None else entries)
    index = index or StoreIndex(store)
    if refs is None:  # claims judged by `judge eval-gold` are found by their exact ids
        refs = gold_to_records(entries).refs
    if judge_version is None:
        judge_version = pick_version(index, entries, refs)
    else:
        judge_version = resolve_version(store, judge_version)
    matching = match_gold(index, entries, judge_version, refs, restrict)
    check_provenance(index, matching, entries)
    if not matching.matched:
        raise EvaluationError(
            f"no gold item of {gold.path} has a verdict by judge {judge_version} "
            f"({len(matching.refused)} refused, {len(matching.not_judged)} not judged); run "
            f"`judge eval-gold {gold.path} --db {store.path}` to judge them")
    return matching


def _watch(store: Store, judge_version: str) -> dict[str, Any] | None:
    from judge.review.triage import recall_watch

    queues = [q for q in store.queue_rows() if judge_version in (q["judge_versions"] or [])]
    return recall_watch(store, queues[-1]["id"]) if queues else None


def pick_version(
    index: StoreIndex, entries: Sequence[GoldEntry], refs: dict[str, ClaimRef] | None
) -> str:
    """The one judge version with verdicts for the gold items; ambiguity is an error."""
    covered = {v: len(match_gold(index, entries, v, refs).matched) for v in index.rows}
    covered = {v: n for v, n in covered.items() if n}
    if not covered:
        raise EvaluationError("no verdict in the store matches any gold item (by id or by claim "
                              "text + sources); judge them first with `judge eval-gold`")
    if len(covered) > 1:
        listing = ", ".join(f"{v} ({n} items)" for v, n in sorted(covered.items()))
        raise EvaluationError(f"several judge versions judged these gold items: {listing}; "
                              "choose one with --judge-version")
    return next(iter(covered))


def resolve_version(store: Store, ref: str) -> str:
    """A judge version id, or a unique prefix of one or of its hash (the part after ``@``)."""
    ids: list[str] = [r["id"] for r in store.judge_versions()]
    if ref in ids:
        return ref
    hits = [i for i in ids if i.startswith(ref) or i.partition("@")[2].startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(ids) or "none"
    if hits:
        raise EvaluationError(f"judge version {ref!r} is ambiguous: {', '.join(hits)}")
    raise EvaluationError(f"judge version {ref!r} is not in the store (known: {known})")
