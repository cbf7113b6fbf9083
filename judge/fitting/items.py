"""Fit items: human gold matched to the stored verdicts of a ``scores`` or ``probe`` judge
version, with what the decision rule reads for each claim.

For every gold claim the store holds a verdict for, the claim is scored again *from the
store*: the program locates the excerpts and renders the ``choose_label`` (``probe_claim``)
prompt exactly as the pipeline does, and the stored call with that key gives the option
log-probabilities (the hidden-state vector) (a replaying model client: a missing call is a
skipped claim, never a model call). So a
rule fitted on these items decides in the pipeline exactly as in the fit, and
``judge eval-gold GOLD -c FITTED.toml`` finds every call it needs in the store.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.decide.linear import features
from judge.decide.probe import ProbeStrategy, probe_text
from judge.decide.scores import ScoresStrategy
from judge.evaluation.calibrate import check_provenance, pick_version, resolve_version
from judge.evaluation.drift import version_config
from judge.evaluation.gold import GoldEntry, GoldFile, GoldRejected, parse_gold_line
from judge.evaluation.matching import StoreIndex, gold_to_records, match_gold
from judge.fitting import FitError, FitRefused
from judge.hashing import content_hash
from judge.models.client import CallFailed, ModelClient, ReplayMiss
from judge.models.prompts import prompts_dir
from judge.records import AnswerRecord
from judge.records.models import DOMAIN_PATTERN
from judge.runs.loop import run_sync
from judge.store import Store
from judge.verdicts import LABELS, Claim, Evidence


@dataclass
class FitItem:
    """One gold claim with its stored scores and the features the rule weighs."""

    gold_id: str
    line: int
    label: str  # the gold label
    #: items of one group (one answer) share a cross-validation fold and a holdout side
    group: str
    #: the answer's domain tag, else the gold item's dataset
    domain: str | None
    dataset: str | None
    record: AnswerRecord
    claim: Claim
    located: list[Evidence]
    #: the options' log-probabilities, normalised over the options (strategy scores)
    scores: dict[str, float]
    call_id: str
    features: dict[str, float]
    #: the stored verdict of the judge version the items were read from
    row: dict[str, Any]
    #: the stored hidden-state vector (strategy probe)
    vector: Any = None

    @property
    def y(self) -> int:
        return LABELS.index(self.label)

    @property
    def read(self) -> str:
        """What the probe read of the claim, for its language (:func:`probe_text`)."""
        return probe_text(self.claim.text, self.located)


@dataclass
class FitData:
    """The items of one gold set under one judge version, and what was left out and why."""

    version: str
    config: JudgeConfig
    gold: dict[str, Any]
    items: list[FitItem] = field(default_factory=list)
    #: reason -> number of matched gold claims left out
    skipped: Counter[str] = field(default_factory=Counter)
    model_calls: int = 0

    def labels(self) -> dict[str, int]:
        counts = Counter(i.label for i in self.items)
        return {label: counts[label] for label in LABELS if counts[label]}


def group_of(item_id: str, answer_id: str | None, converted_answer: str) -> str:
    """An item's group: the answer it belongs to (``answer_id``, as the review queue's gold
    export gives it); else, for ids of the form ``<dataset>:<group>:<local>`` (the external
    gold sets, gold/README.md), the ``<dataset>:<group>`` part (one claim's evidence
    passages, one dialogue); else the answer record the item was judged as."""
    if answer_id:
        return answer_id
    parts = item_id.split(":")
    if len(parts) >= 3:
        return ":".join(parts[:2])
    return converted_answer


def gold_from_store(store: Store) -> GoldFile:
    """The reviews adjudicated in the store (:func:`judge.review.gold_export.gold_lines`: a
    subject whose reviewers agree, or that an adjudication decided) as a gold file; only
    people's labels, checked line by line like any gold file."""
    from judge.review.gold_export import gold_lines

    lines = [json.dumps(line, ensure_ascii=False, sort_keys=True) for line in gold_lines(store)]
    gold = GoldFile(path=Path(f"{store.path or ':memory:'} (reviews)"),
                    sha256=content_hash(lines))
    for number, text in enumerate(lines, start=1):
        gold.lines += 1
        item, problems = parse_gold_line(text.encode("utf-8"), number)
        gold.problems += problems
        if item is not None:
            gold.entries.append(GoldEntry(number, item))
    if not gold.ok:
        raise GoldRejected(gold)
    if not gold.entries:
        raise FitRefused(
            f"no reviewed claim in {store.path or 'the store'} is gold yet (a claim becomes "
            "gold when its reviewers agree, or an adjudication decided it); review the queue, "
            "or pass a gold file with --gold")
    return gold


def load_items(
    store: Store,
    gold: GoldFile,
    judge_version: str | None = None,
    *,
    domain: str | None = None,
    exclude_claims: Iterable[str] = (),
    skip_refused: bool = False,
) -> FitData:
    """The fit items of ``gold`` under ``judge_version`` (default: the one version that judged
    the gold claims), in gold file order.

    ``domain``: only the items of that domain; None: the items of every domain that has no
    rule of its own in the version's config (the default rule decides only those). Refuses
    gold labelled by a model, answers generated by the judge model's family, and a version
    that is not ``scores`` or has no stored score call for any gold claim. ``skip_refused``:
    count gold on answers the judge refused to grade (never judged, so never fitted on)
    instead of refusing: the store's own review queue holds such answers."""
    entries = list(gold.entries)
    if not entries:
        raise FitRefused(f"{gold.path}: no gold items")
    conv = gold_to_records(entries)
    index = StoreIndex(store)
    if judge_version is None:
        version = pick_version(index, entries, conv.refs)
    else:
        version = resolve_version(store, judge_version)
    stored = index.configs.get(version, {})
    if stored.get("strategy") not in ("scores", "probe"):
        raise FitRefused(
            f"judge version {version} uses strategy {stored.get('strategy', 'batch')!r}: "
            "`judge fit` learns the decision rule of strategy 'scores' (from stored option "
            "scores) or the head of strategy 'probe' (from stored hidden states); judge the "
            "gold claims with such a config first (the embedded default is one)")
    config = version_config(store, version)
    matching = match_gold(index, entries, version, conv.refs)
    check_provenance(index, matching, entries)
    if matching.refused and not skip_refused:
        entry, reason = matching.refused[0]
        raise FitRefused(
            f"refused: {len(matching.refused)} gold claim(s) belong to answers the judge "
            f"model's own family generated (e.g. gold line {entry.line}, {entry.item.id}: "
            f"{reason}). A model never grades its own answers, and its family's answers "
            "never train its rule; remove those items from the gold.")
    if not matching.matched:
        raise FitError(
            f"no gold item of {gold.path} has a verdict by judge {version} "
            f"({len(matching.refused)} refused, {len(matching.not_judged)} not judged); run "
            f"`judge eval-gold {gold.path} --db {store.path}` to judge them")
    data = FitData(version, config, {
        "file": str(gold.path), "sha256": gold.sha256, "items": len(entries),
        "matched": len(matching.matched), "not_judged": len(matching.not_judged),
        "refused": len(matching.refused)})
    if matching.refused:
        data.skipped["answers the judge refused to grade (self-grading)"] += len(
            matching.refused)
    excluded = set(exclude_claims)
    client = ModelClient(config, store, replay=True)
    probe = config.strategy == "probe"
    strategy: ScoresStrategy | ProbeStrategy = (
        ProbeStrategy if probe else ScoresStrategy)(config, client, prompts_dir())
    records: dict[str, AnswerRecord | None] = {}
    todo: list[tuple[GoldEntry, dict[str, Any], AnswerRecord, Claim, str | None]] = []
    for m in matching.matched:
        row, item = m.row, m.entry.item
        if row["claim_id"] in excluded:
            data.skipped["in the evaluation claims"] += 1
            continue
        if row["answer_id"] not in records:
            records[row["answer_id"]] = store.answer_record(row["answer_id"])
        record = records[row["answer_id"]]
        if record is None:  # cannot happen: a verdict's answer is stored with it
            data.skipped["answer not in the store"] += 1
            continue
        tag = record.domain or conv.domains.get(row["answer_id"]) or _domain(item.dataset)
        if domain is not None and tag != domain:
            continue
        if domain is None and tag in config.domain_rules:
            data.skipped[f"decided by the rule of domain {tag}"] += 1
            continue
        if row["label"] == "judge_error":
            data.skipped["judge_error verdict (no scores)"] += 1
            continue
        todo.append((m.entry, row, record, claim_of(row), tag))
    scored = run_sync(_score_all(strategy, [(t[2], t[3]) for t in todo]))
    for (entry, row, record, claim, tag), result in zip(todo, scored, strict=True):
        if result is None:
            data.skipped["no stored score call for the claim"] += 1
            continue
        located, output, call_id = result
        scores: dict[str, float] = {}
        values: dict[str, float] = {}
        if probe:
            vector = output
        else:
            vector, scores = None, output
            _, cfg = config.rule_for(tag)
            values = features(claim.text, scores, located, record, cfg.support_overlap_min,
                              cfg.numbers_overlap_min)
        data.items.append(FitItem(
            gold_id=entry.item.id, line=entry.line, label=entry.item.label,
            group=group_of(entry.item.id, entry.item.answer_id, row["answer_id"]),
            domain=tag, dataset=entry.item.dataset, record=record, claim=claim,
            located=located, scores=scores, call_id=call_id, features=values, row=row,
            vector=vector))
    data.model_calls = client.stats.made
    if todo and not data.items:
        raise FitRefused(
            f"judge version {version} has no stored score call for any of the "
            f"{len(todo)} gold claims in scope: the stored calls were made for other "
            "excerpts or prompts (the code or prompt templates changed since), or failed")
    return data


def claim_of(row: dict[str, Any]) -> Claim:
    """The claim of a stored verdict row (:meth:`judge.store.Store.verdict_rows`)."""
    return Claim(id=row["claim_id"], answer_id=row["answer_id"], index=row["idx"],
                 text=row["claim"], citations=row["citations"], origin=row["origin"],
                 is_abstention=row["is_abstention"])


async def _score_all(
    strategy: ScoresStrategy | ProbeStrategy, pairs: Sequence[tuple[AnswerRecord, Claim]]
) -> list[tuple[list[Evidence], Any, str] | None]:
    """Each claim's located evidence, stored scores (or vector) and call id; None: no
    stored call for it."""
    async def one(record: AnswerRecord, claim: Claim) -> tuple[list[Evidence], Any, str] | None:
        try:
            if isinstance(strategy, ProbeStrategy):
                return await strategy.vector(record, claim, None)
            return await strategy.score(record, claim, None)
        except (ReplayMiss, CallFailed):
            return None

    return list(await asyncio.gather(*(one(r, c) for r, c in pairs)))


def _domain(dataset: str | None) -> str | None:
    return dataset if dataset and re.fullmatch(DOMAIN_PATTERN, dataset) else None
