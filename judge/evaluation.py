"""The judge measured against human gold, and judge versions against each other.

The statistics live in :mod:`calibration` (pure functions); this module connects them to the
store and to gold files:

* :func:`gold_to_records` turns gold items into answer records with pre-split claims, so that
  :func:`judge.runner.run_batch` judges exactly the gold claims (``judge eval-gold``).
* :func:`match_gold` finds each gold item's verdict under one judge version: by the claim id
  the evaluation gave it, by ``claim_id`` / ``id``, or by claim text + sources.
* :func:`calibrate` enforces the provenance rules and the self-grading ban, then builds the
  calibration report with the review-queue view, judge errors, refused answers, the
  zero-tolerance validity gate and the gold items no verdict was found for.
* :func:`drift_pairs` / :func:`ensure_judged` support ``judge drift``.
* ``python -m judge.evaluation --update-readme out/eval.json`` regenerates the README quality
  table between ``<!-- quality:start -->`` and ``<!-- quality:end -->``.

Nothing is dropped silently: every gold item ends up matched, refused (the judge refused its
answer: self-grading ban) or not judged, and each count is in the report.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calibration import (
    CalibrationItem,
    CalibrationReport,
    DriftPair,
    Figures,
    HumanLabel,
    build_calibration_report,
)
from judge.config import JudgeConfig
from judge.gold import GoldEntry, GoldFile, GoldItem
from judge.queue import claim_reasons, reading_positions
from judge.records import MAX_ID_CHARS, AnswerRecord, content_hash, read_records
from judge.selfgrade import normalize_model, self_grading_reason
from judge.store import Store
from judge.verdicts import LABELS

#: Thresholds ``--fail-on`` understands besides :func:`calibration.check_thresholds`'s:
#: the zero-tolerance validity gate, as counts.
GATE_THRESHOLDS = ("schema_errors_above", "invalid_evidence_above")

QUALITY_START = "<!-- quality:start -->"
QUALITY_END = "<!-- quality:end -->"


class EvaluationError(ValueError):
    """A request that cannot be served (unknown version, nothing matched, ...)."""


class CalibrationRefused(EvaluationError):
    """The self-grading ban or a provenance rule forbids this report. No override exists."""


# --------------------------------------------------------------------------- normalising


def norm_text(text: str) -> str:
    """NFKC, whitespace collapsed, trailing sentence punctuation dropped: for matching a gold
    claim to a stored claim by text."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip("。．.!！?？;；").strip()


def _source_content(text: str | None, json_doc: Any) -> str:
    if text is not None:
        return norm_text(text)
    return json.dumps(json_doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def sources_fingerprint(contents: Iterable[str]) -> str:
    """Identity of a set of source contents (ids ignored: they may be renamed in transit)."""
    return content_hash(sorted(contents))[:24]


def gold_fingerprint(item: GoldItem) -> str:
    return sources_fingerprint(_source_content(s.text, s.json_doc) for s in item.sources)


# --------------------------------------------------------------------------- gold -> records


@dataclass(frozen=True)
class ClaimRef:
    """Where the evaluation put a gold item: its answer record and claim id."""

    answer_id: str
    claim_id: str


@dataclass
class Conversion:
    """Answer records built from gold items (one per answer group) and each item's claim."""

    records: list[dict[str, Any]] = field(default_factory=list)
    refs: dict[str, ClaimRef] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def jsonl(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                       for r in self.records)


def _short_source_id(source_id: str, taken: set[str]) -> str:
    """Answer records limit source ids to ``MAX_ID_CHARS``: keep a readable head and a hash."""
    if len(source_id) <= MAX_ID_CHARS and source_id not in taken:
        return source_id
    short = f"{source_id[:MAX_ID_CHARS - 20]}~{content_hash(source_id)[:12]}"
    return short


def _group_key(item: GoldItem) -> str | None:
    if item.answer_id is None:
        return None
    return content_hash([item.dataset, item.answer_id, item.question, item.answer,
                         item.generator, [s.model_dump(by_alias=True) for s in item.sources]])


def gold_to_records(entries: Sequence[GoldEntry]) -> Conversion:
    """Answer records with pre-split claims for the gold items.

    Items that name the same ``answer_id`` (with the same question, answer, generator and
    sources) become one answer with several claims, judged together as the answer would be;
    every other item is an answer of its own, so its verdict never depends on which other
    items are in the file. A claim without ``citations`` cites every source of its item (the
    external datasets give exactly the evidence the claim is to be checked against). An item
    identical to an earlier one (same claim in the same answer) maps to the same claim.
    Answer ids are ``gold-<hash of the record>``: stable, and never a sample answer's id.
    """
    # imported here: judge.pipeline pulls in the model client (litellm)
    from judge.pipeline import claim_id

    conv = Conversion()
    groups: dict[str, list[GoldEntry]] = {}
    order: list[str] = []
    for entry in entries:
        key = _group_key(entry.item) or f"item:{entry.item.id}"
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(entry)
    seen_records: dict[str, dict[str, Any]] = {}
    for key in order:
        group = groups[key]
        first = group[0].item
        if not first.sources:
            for e in group:
                conv.problems.append(f"line {e.line} ({e.item.id}): no sources; a gold item "
                                     "must carry the sources its claim is judged against")
            continue
        taken: set[str] = set()
        id_map: dict[str, str] = {}
        sources = []
        for s in first.sources:
            short = _short_source_id(s.id, taken)
            taken.add(short)
            id_map[s.id] = short
            sources.append({**s.model_dump(by_alias=True, exclude_none=True), "id": short})
        claims: list[dict[str, Any]] = []
        claim_index: dict[str, int] = {}
        positions: list[int] = []
        for e in group:
            item = e.item
            if item.citations is None:
                citations = [{"source": id_map[s.id]} for s in item.sources]
            else:
                citations = [
                    {**c.model_dump(exclude_none=True), "source": id_map[c.source]}
                    for c in item.citations
                ]
            spec = {"text": item.claim.strip(), "citations": citations}
            ident = content_hash(spec)
            if ident not in claim_index:
                claim_index[ident] = len(claims)
                claims.append(spec)
            positions.append(claim_index[ident])
        record: dict[str, Any] = {
            "question": first.question,
            "answer": first.answer if first.answer and first.answer.strip() else
            " ".join(c["text"] for c in claims),
            "sources": sources,
            "claims": claims,
            "generator": first.generator,
        }
        record = {k: v for k, v in record.items() if v is not None}
        record["id"] = "gold-" + content_hash(record)[:20]
        try:
            AnswerRecord.model_validate(record)
        except Exception as exc:  # report per gold line, do not let the run reject it
            for e in group:
                conv.problems.append(f"line {e.line} ({e.item.id}): cannot be judged: {exc}")
            continue
        answer_id = record["id"]
        ids = _claim_ids(answer_id, [c["text"] for c in claims], claim_id)
        for e, position in zip(group, positions, strict=True):
            conv.refs[e.item.id] = ClaimRef(answer_id, ids[position])
        if answer_id not in seen_records:
            seen_records[answer_id] = record
            conv.records.append(record)
    return conv


def _claim_ids(answer_id: str, texts: list[str], claim_id: Callable[..., str]) -> list[str]:
    """Claim ids exactly as the pipeline assigns them to pre-split claims."""
    seen: dict[str, int] = {}
    out = []
    for text in texts:
        key = unicodedata.normalize("NFKC", text).strip()
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        out.append(claim_id(answer_id, text, occurrence))
    return out


def records_path(db: Path, gold_path: Path, conv: Conversion) -> Path:
    """Where the converted records of a gold file are written: next to the store, named by
    content, so that running the same gold again resumes the same run."""
    digest = content_hash(conv.jsonl())[:12]
    return Path(db).parent / "gold-inputs" / f"{Path(gold_path).stem}-{digest}.jsonl"


def write_records(conv: Conversion, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = conv.jsonl()
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- store index


class StoreIndex:
    """Verdict rows of a store indexed by judge version, claim id and claim text + sources."""

    def __init__(self, store: Store, judge_versions: Iterable[str] | None = None) -> None:
        self.store = store
        wanted = set(judge_versions) if judge_versions is not None else None
        self.rows: dict[str, dict[str, dict[str, Any]]] = {}
        for row in store.verdict_rows():
            if wanted is not None and row["judge_version"] not in wanted:
                continue
            self.rows.setdefault(row["judge_version"], {})[row["claim_id"]] = row
        self._fingerprints: dict[str, str] | None = None
        self._by_text: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
        self._by_text_only: dict[str, dict[str, list[dict[str, Any]]]] = {}
        versions = store.judge_versions()
        self.models = {r["id"]: r["model"] for r in versions}
        #: each version's versioned settings, as stored
        self.configs: dict[str, dict[str, Any]] = {
            r["id"]: json.loads(r["config"]) for r in versions}
        self.generators = {
            r["id"]: r["generator"]
            for r in store.db.query("select id, generator from answers")
        }

    def fingerprints(self) -> dict[str, str]:
        if self._fingerprints is None:
            contents: dict[str, list[str]] = {}
            for row in self.store.db.query("select answer_id, text, json from sources"):
                doc = json.loads(row["json"]) if row["json"] is not None else None
                contents.setdefault(row["answer_id"], []).append(
                    _source_content(row["text"], doc))
            self._fingerprints = {a: sources_fingerprint(c) for a, c in contents.items()}
        return self._fingerprints

    def by_text(self, version: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
        if version not in self._by_text:
            fps = self.fingerprints()
            index: dict[tuple[str, str], list[dict[str, Any]]] = {}
            only: dict[str, list[dict[str, Any]]] = {}
            for row in self.rows.get(version, {}).values():
                text = norm_text(row["claim"])
                index.setdefault((text, fps.get(row["answer_id"], "")), []).append(row)
                only.setdefault(text, []).append(row)
            self._by_text[version] = index
            self._by_text_only[version] = only
        return self._by_text[version]

    def by_text_only(self, version: str) -> dict[str, list[dict[str, Any]]]:
        self.by_text(version)
        return self._by_text_only[version]

    def refused_reason(self, version: str, answer_id: str) -> str | None:
        row = next(self.store.db.query(
            "select ra.refused_reason from run_answers ra join runs r on r.id = ra.run_id "
            "where r.judge_version = ? and ra.answer_id = ? and ra.status = 'refused' limit 1",
            [version, answer_id]), None)
        return row["refused_reason"] if row else None


# --------------------------------------------------------------------------- matching


@dataclass
class Match:
    entry: GoldEntry
    row: dict[str, Any]
    how: str  # "eval" | "claim_id" | "text"


@dataclass
class Matching:
    """Every gold item, placed: matched to a verdict, refused (its answer was refused by the
    judge), not judged by this version, or a duplicate of an earlier item's claim."""

    judge_version: str
    matched: list[Match] = field(default_factory=list)
    refused: list[tuple[GoldEntry, str]] = field(default_factory=list)
    not_judged: list[GoldEntry] = field(default_factory=list)
    duplicates: list[tuple[GoldEntry, str]] = field(default_factory=list)
    ambiguous: int = 0


def match_gold(
    index: StoreIndex,
    entries: Sequence[GoldEntry],
    judge_version: str,
    refs: dict[str, ClaimRef] | None = None,
    restrict: set[str] | None = None,
) -> Matching:
    """Place every gold item under ``judge_version``. ``refs`` (from :func:`gold_to_records`)
    gives the exact claim ids of an evaluation run; ``restrict`` limits matches to those
    claim ids (items outside are reported as not judged)."""
    rows = index.rows.get(judge_version, {})
    matching = Matching(judge_version)
    taken: dict[str, Match] = {}
    for entry in entries:
        item = entry.item
        found: tuple[dict[str, Any], str] | None = None
        ref = (refs or {}).get(item.id)
        if ref is not None and ref.claim_id in rows:
            found = rows[ref.claim_id], "eval"
        # an evaluation answer of this item is in the store: its claim is the only candidate
        authoritative = ref is not None and ref.answer_id in index.generators
        for cid in (item.claim_id, item.id):
            if found is None and not authoritative and cid and cid in rows:
                found = rows[cid], "claim_id"
        if found is None and not authoritative:
            text = norm_text(item.claim)
            if item.sources:
                candidates = index.by_text(judge_version).get((text, gold_fingerprint(item)), [])
            else:
                candidates = index.by_text_only(judge_version).get(text, [])
            if item.answer_id and item.answer_id in index.generators:
                # the gold item names an answer this store holds: only its claims qualify
                candidates = [r for r in candidates if r["answer_id"] == item.answer_id]
            candidates = _prefer(candidates, item, index, taken)
            if len({r["claim_id"] for r in candidates}) > 1:
                matching.ambiguous += 1
            if candidates:
                found = candidates[0], "text"
        if found is not None and restrict is not None and found[0]["claim_id"] not in restrict:
            found = None
        if found is None:
            answer_ids = [a for a in ((ref.answer_id if ref else None), item.answer_id) if a]
            reason = next((r for r in (index.refused_reason(judge_version, a)
                                       for a in answer_ids) if r), None)
            if reason:
                matching.refused.append((entry, reason))
            else:
                matching.not_judged.append(entry)
            continue
        row, how = found
        if row["claim_id"] in taken:
            matching.duplicates.append((entry, row["claim_id"]))
            continue
        match = Match(entry, row, how)
        taken[row["claim_id"]] = match
        matching.matched.append(match)
    return matching


def _prefer(
    candidates: list[dict[str, Any]], item: GoldItem, index: StoreIndex, taken: dict[str, Any]
) -> list[dict[str, Any]]:
    """Narrow text matches: same answer id, then same generator, then a claim no earlier gold
    item took (each rule applies only when it leaves some candidate)."""
    rules = (
        lambda r: r["answer_id"] == item.answer_id,
        lambda r: index.generators.get(r["answer_id"]) == item.generator,
        lambda r: r["claim_id"] not in taken,
    )
    for rule in rules:
        preferred = [r for r in candidates if rule(r)]
        candidates = preferred or candidates
    return candidates


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

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [m.row for m in self.matching.matched]


def validity_gate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The zero-tolerance layer, kept apart from agreement rates (seed 001: gates are layered,
    never averaged into one score). ``schema``: the judge returned no valid structured output
    (``judge_error``). ``evidence``: the judge's evidence names a source that does not exist or
    quotes text that is not in it. Both must be 0 to pass. Answer citations that do not
    resolve are the answer's problem, not the judge's: counted for information."""
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
    matching: Matching,
) -> tuple[list[CalibrationItem], list[HumanLabel], dict[str, int], list[str]]:
    """Calibration items, people's labels (when some claim has two), stratum sizes, notes."""
    items: list[CalibrationItem] = []
    labels: dict[str, list[tuple[str, str]]] = {}
    population: dict[str, int] = {}
    notes: list[str] = []
    # the default queue's reading order over these claims, for the budget figures
    positions = reading_positions([m.row for m in matching.matched])
    for m in matching.matched:
        gold, row = m.entry.item, m.row
        items.append(CalibrationItem(
            claim_id=row["claim_id"], gold_label=gold.label, gold_subtype=gold.subtype,
            judge_label=row["label"], judge_subtype=row["subtype"], in_queue=bool(row["review"]),
            queue_position=positions.get(row["claim_id"]), support=row.get("support"),
            flagged=any(r != "doubtful_support" for r in claim_reasons(row)),
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
) -> CalibrationOutcome:
    """The calibration report of one judge version against a (validated) gold file."""
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
    items, human, population, notes = calibration_items(matching)
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
        gold={"file": str(gold.path), "sha256": gold.sha256, "items": len(entries),
              "matched": len(matching.matched),
              "matched_by": {how: sum(1 for m in matching.matched if m.how == how)
                             for how in ("eval", "claim_id", "text")},
              "duplicates": len(matching.duplicates)},
    )


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
    ids = [r["id"] for r in store.judge_versions()]
    if ref in ids:
        return ref
    hits = [i for i in ids if i.startswith(ref) or i.partition("@")[2].startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(ids) or "none"
    if hits:
        raise EvaluationError(f"judge version {ref!r} is ambiguous: {', '.join(hits)}")
    raise EvaluationError(f"judge version {ref!r} is not in the store (known: {known})")


# --------------------------------------------------------------------------- JSON


def _ci(e: Any) -> dict[str, Any]:
    d = e.model_dump(mode="json")
    return {"ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": d["n"]}


def _est(e: Any) -> dict[str, Any]:
    d = e.model_dump(mode="json")
    return {"value": d["value"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": d["n"]}


def _value(e: Any) -> float | None:
    return e.model_dump(mode="json")["value"]


def flatten_figures(f: Figures) -> dict[str, Any]:
    """The JSON contract of a set of figures: plain numbers where the contract wants them
    (``accuracy``, ``balanced_accuracy``, ``queue_recall``, ``queue_load``) with the
    intervals alongside (``*_ci``); ``kappa``, ``lenient_rate``, ``strict_rate`` as
    ``value``/``ci_low``/``ci_high``/``n``."""
    d = f.model_dump(mode="json")
    return {
        "n": f.n,
        "confusion": d["confusion"],
        "accuracy": _value(f.accuracy), "accuracy_ci": _ci(f.accuracy),
        "balanced_accuracy": _value(f.balanced_accuracy),
        "balanced_accuracy_ci": _ci(f.balanced_accuracy),
        "kappa": _est(f.kappa),
        "lenient_rate": _est(f.lenient_rate),
        "strict_rate": _est(f.strict_rate),
        "lenient_by_label": {k: _est(v) for k, v in f.lenient_by_label.items()},
        "lenient_by_subtype": {k: _est(v) for k, v in f.per_subtype.items()},
        "per_label": d["per_label"],
        "subtype_agreement": _est(f.subtype_agreement),
        "queue_recall": _value(f.queue_recall), "queue_recall_ci": _ci(f.queue_recall),
        "queue_load": _value(f.queue_load), "queue_load_ci": _ci(f.queue_load),
        "queue_false_alarm": _est(f.queue_false_alarm),
        "queue_budget": {k: _est(v) for k, v in f.queue_budget.items()},
        "queue_points": [{"review_support_below": p.review_support_below,
                          "recall": _est(p.recall), "false_alarm": _est(p.false_alarm),
                          "load": _est(p.load)} for p in f.queue_points],
        "judge_errors": f.judge_errors,
        "judge_errors_by_gold_label": d["judge_errors_by_gold_label"],
    }


def calibration_json(outcome: CalibrationOutcome) -> dict[str, Any]:
    """One JSON object: the contract keys, the extras, and the full report under ``report``
    (which validates back into :class:`calibration.CalibrationReport`)."""
    r = outcome.report
    m = outcome.matching
    dump = r.model_dump(mode="json")
    out = {
        "judge_version": r.judge_version,
        "model": outcome.model,
        "review_support_below": outcome.review_support_below,
        **flatten_figures(r),
        "refused_answers": {
            "count": len(m.refused),
            "items": [{"gold_id": e.item.id, "line": e.line, "reason": reason}
                      for e, reason in m.refused],
        },
        "not_judged": {"count": len(m.not_judged),
                       "gold_ids": [e.item.id for e in m.not_judged][:100]},
        "validity_gate": outcome.gate,
        "weighted": dump["weighted"],
        "per_dataset": {name: flatten_figures(f) for name, f in r.per_dataset.items()},
        "human_agreement": dump["human_agreement"],
        "notes": r.notes,
        "gold": outcome.gold,
        "confidence": r.confidence,
        "report": dump,
    }
    return out


# --------------------------------------------------------------------------- HTML


def _esc(value: Any) -> str:
    import html

    return html.escape(str(value), quote=True)


def extra_html(outcome: CalibrationOutcome, title: str = "Gates, refusals and coverage") -> str:
    """A section the calibration package's page does not have: the validity gate (apart from
    the rates), refused answers and gold items without a verdict, and the gold file."""
    g, m = outcome.gate, outcome.matching
    status = "passed" if g["passed"] else "FAILED"
    parts = [
        f"<h2>{_esc(title)}</h2>",
        "<h3>Validity gate (zero tolerance, not a rate)</h3>",
        "<table><tr><th class=\"l\">gate</th><th>failures</th><th>of</th>"
        "<th class=\"l\">status</th></tr>",
        f"<tr><th class=\"l\">schema (judge produced valid output)</th>"
        f"<td>{g['schema']['failures']}</td><td>{g['n']}</td>"
        f"<td class=\"l\">{'passed' if g['schema']['passed'] else 'FAILED'}</td></tr>",
        f"<tr><th class=\"l\">evidence (judge's quotes and source ids exist)</th>"
        f"<td>{g['evidence']['failures']}</td><td>{g['n']}</td>"
        f"<td class=\"l\">{'passed' if g['evidence']['passed'] else 'FAILED'}</td></tr>",
        "</table>",
        f"<p>Gate: <b class=\"{'' if g['passed'] else 'bad'}\">{status}</b>. Answer citations "
        f"that do not resolve (the answer's fault, sent to review): "
        f"{g['answer_citation_failures']}.</p>",
        "<h3>Coverage of the gold file</h3>",
        f"<p>Gold file <code>{_esc(outcome.gold['file'])}</code> (sha256 "
        f"{_esc(outcome.gold['sha256'][:12])}): {outcome.gold['items']} items; "
        f"{len(m.matched)} matched to a verdict, {len(m.refused)} refused by the judge "
        f"(self-grading ban), {len(m.not_judged)} not judged by this version, "
        f"{len(m.duplicates)} duplicates of an earlier item. Judge model: "
        f"<code>{_esc(outcome.model)}</code>.</p>",
    ]
    if m.refused:
        parts.append("<table id=\"refused\"><tr><th class=\"l\">gold item</th>"
                     "<th class=\"l\">reason</th></tr>")
        parts += [f"<tr><td class=\"l\">{_esc(e.item.id)}</td><td class=\"l\">{_esc(r)}</td></tr>"
                  for e, r in m.refused]
        parts.append("</table>")
    if m.not_judged:
        shown = ", ".join(_esc(e.item.id) for e in m.not_judged[:50])
        parts.append(f"<p class=\"note\">Not judged: {shown}"
                     f"{' …' if len(m.not_judged) > 50 else ''}</p>")
    return "\n".join(parts)


def inject_html(page: str, section: str) -> str:
    """Add ``section`` at the end of a page rendered by :mod:`calibration.render`."""
    marker = "</body>"
    at = page.rfind(marker)
    return page[:at] + section + "\n" + page[at:] if at >= 0 else page + section


# --------------------------------------------------------------------------- cost


def eval_cost(store: Store, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What judging these claims cost, from the stored calls (so a resumed or repeated run
    reports the cost of the verdicts, not of its tail): calls, model seconds, tokens."""
    call_ids = sorted({c for r in rows for c in r["call_ids"]})
    totals = {"calls": 0, "latency_ms": 0.0, "prompt_tokens": 0, "completion_tokens": 0,
              "cost": 0.0, "failed": 0}
    for start in range(0, len(call_ids), 500):
        chunk = call_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for row in store.db.query(
            f"select latency_ms, prompt_tokens, completion_tokens, cost, error from calls "
            f"where id in ({marks})", chunk):
            totals["calls"] += 1
            totals["latency_ms"] += row["latency_ms"] or 0.0
            totals["prompt_tokens"] += row["prompt_tokens"] or 0
            totals["completion_tokens"] += row["completion_tokens"] or 0
            totals["cost"] += row["cost"] or 0.0
            totals["failed"] += int(row["error"] is not None)
    n = len(rows)
    return {
        "claims": n,
        "calls": totals["calls"],
        "failed_calls": totals["failed"],
        "model_seconds": round(totals["latency_ms"] / 1000, 1),
        "calls_per_claim": round(totals["calls"] / n, 3) if n else None,
        "seconds_per_claim": round(totals["latency_ms"] / 1000 / n, 2) if n else None,
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "cost_usd": round(totals["cost"], 6),
    }


# --------------------------------------------------------------------------- drift


def version_config(store: Store, version: str) -> JudgeConfig:
    """The judge config a stored version was run with; refuses when its prompt templates have
    changed since (re-running it would be a different judge)."""
    from judge.models.client import ModelClient
    from judge.pipeline import Pipeline

    row = next(store.db.query("select * from judge_versions where id = ?", [version]), None)
    if row is None:
        raise EvaluationError(f"judge version {version!r} is not in the store")
    # as the CLI builds a config (profile defaults included): the stored config holds only
    # the versioned fields
    config = JudgeConfig.load(None, **json.loads(row["config"]))
    pipeline = Pipeline(config, ModelClient(config, None, replay=True))
    if pipeline.judge_version != version:
        raise EvaluationError(
            f"judge version {version} cannot be re-run: its config now gives version "
            f"{pipeline.judge_version} (a prompt template changed)")
    return config


def input_answer_ids(path: Path) -> list[str]:
    return [item.record.answer_id for item in read_records(path) if hasattr(item, "record")]


def missing_answers(store: Store, version: str, answer_ids: Iterable[str]) -> list[str]:
    return [a for a in answer_ids if not store.answer_done(version, a)]


def drift_pairs(
    index: StoreIndex,
    version_a: str,
    version_b: str,
    *,
    answer_ids: set[str] | None = None,
    claim_ids: set[str] | None = None,
    gold_by_claim: dict[str, str] | None = None,
) -> tuple[list[DriftPair], list[str], list[str]]:
    """Pairs of verdicts on the claims both versions judged (in scope), and the claim ids only
    one of them judged."""
    def scoped(version: str) -> dict[str, dict[str, Any]]:
        rows = index.rows.get(version, {})
        return {
            cid: r for cid, r in rows.items()
            if (answer_ids is None or r["answer_id"] in answer_ids)
            and (claim_ids is None or cid in claim_ids)
        }

    rows_a, rows_b = scoped(version_a), scoped(version_b)
    gold_by_claim = gold_by_claim or {}
    pairs = [
        DriftPair(claim_id=cid, label_a=ra["label"], label_b=rows_b[cid]["label"],
                  rationale_a=ra["rationale"], rationale_b=rows_b[cid]["rationale"],
                  gold_label=gold_by_claim.get(cid))
        for cid, ra in rows_a.items() if cid in rows_b
    ]
    only_a = [c for c in rows_a if c not in rows_b]
    only_b = [c for c in rows_b if c not in rows_a]
    return pairs, only_a, only_b


# --------------------------------------------------------------------------- README table


def _pct(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.2f}"


def _with_ci(e: dict[str, Any], fmt: Callable[[float | None], str]) -> str:
    value = fmt(e.get("value"))
    if e.get("ci_low") is None or e.get("ci_high") is None:
        return value
    return f"{value} ({fmt(e['ci_low'])}–{fmt(e['ci_high'])})"


def _row(name: str, f: dict[str, Any]) -> str:
    acc = {"value": f["accuracy"], **f["accuracy_ci"]}
    return (f"| {name} | {f['n']} | {_with_ci(acc, _pct)} | {_pct(f['balanced_accuracy'])} | "
            f"{_with_ci(f['kappa'], _num)} | {_with_ci(f['lenient_rate'], _pct)} | "
            f"{_with_ci(f['strict_rate'], _pct)} | {_pct(f['queue_recall'])} | "
            f"{_pct(f['queue_load'])} | {f['judge_errors']} |")


def quality_table(data: dict[str, Any]) -> str:
    """The README quality section, generated from ``judge eval-gold --output-json``."""
    gate = data["validity_gate"]
    cost = data.get("cost") or {}
    gold = data["gold"]
    subset = f"the first {data['limit']} items" if data.get("limit") else "all items"
    lines = [
        f"Measured {data.get('generated_at', '?')[:10]} by `make eval`: judge "
        f"`{data['judge_version']}` (model `{data['model']}`) on {subset} of `{gold['file']}` "
        f"(sha256 `{gold['sha256'][:12]}`, {gold['items']} claims; see `gold/README.md` for "
        "how the subset was drawn: label-balanced, short sources preferred). Intervals are 95% "
        "(Wilson; bootstrap for κ). Lenient = gold non-supported claims the judge passed as "
        "supported (missed hallucinations); strict = gold-supported claims it flagged; queue "
        "recall / load = share of gold non-supported claims / of all claims the review queue "
        "would send to people. Generated, never typed by hand.",
        "",
        "| dataset | claims | accuracy | balanced acc. | κ | lenient rate | strict rate | "
        "queue recall | queue load | judge errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in sorted((data.get("per_dataset") or {}).items()):
        lines.append(_row(name, figures))
    lines.append(_row("**all**", data))
    lines += ["", *recall_table(data), "", *queue_projection(data)]
    lines += [
        "",
        f"Validity gate (zero tolerance, apart from the rates): "
        f"{'passed' if gate['passed'] else 'failed'}: {gate['schema']['failures']} schema "
        f"failures (`judge_error`), {gate['evidence']['failures']} claims with evidence not "
        f"found in the cited source, of {gate['n']}. Refused answers: "
        f"{data['refused_answers']['count']}; gold items not judged: "
        f"{data['not_judged']['count']}.",
    ]
    if cost:
        lines.append(
            f"Cost per claim: {cost.get('calls_per_claim')} model calls, "
            f"{cost.get('seconds_per_claim')} s of model time "
            f"({cost.get('calls')} calls, {cost.get('model_seconds')} s for "
            f"{cost.get('claims')} claims; wall time of the last run "
            f"{data.get('run', {}).get('wall_seconds', '?')} s on {data.get('cpus', '?')} CPU "
            "cores)."
        )
    return "\n".join(lines)


RECALL_LABELS = LABELS


def _recall_cell(figures: dict[str, Any], label: str) -> str:
    metrics = (figures.get("per_label") or {}).get(label) or {}
    if not metrics.get("support"):
        return "–"
    return f"{_with_ci(metrics['recall'], _pct)} (n={metrics['support']})"


def recall_table(data: dict[str, Any]) -> list[str]:
    """Recall per gold label (the share of each label's claims the judge labelled so),
    per dataset and overall: a gain on one set that costs another stays visible."""
    lines = [
        "Recall per gold label (95% Wilson interval; n = gold claims with that label):",
        "",
        "| dataset | " + " | ".join(RECALL_LABELS) + " |",
        "|---|" + "---:|" * len(RECALL_LABELS),
    ]
    rows = sorted((data.get("per_dataset") or {}).items()) + [("**all**", data)]
    for name, figures in rows:
        cells = " | ".join(_recall_cell(figures, label) for label in RECALL_LABELS)
        lines.append(f"| {name} | {cells} |")
    return lines


def queue_projection(data: dict[str, Any]) -> list[str]:
    """The queue's load at other hallucination rates: recall and false-alarm rate do not
    depend on the label mix, the load does (a label-balanced set inflates it)."""
    from calibration import max_share_for_load, projected_load

    recall, alarm = data.get("queue_recall"), (data.get("queue_false_alarm") or {}).get("value")
    if recall is None or alarm is None:
        return []
    confusion = data.get("confusion") or {}
    total = sum(sum(row.values()) for row in confusion.values())
    rejected = total - sum((confusion.get("supported") or {}).values())
    shares = [("a", 0.10), ("a", 0.20)] + ([("this subset's", rejected / total)] if total else [])
    cells = [f"{projected_load(recall, alarm, share):.0%} at {name} {share:.0%} share"
             for name, share in shares]
    limit = max_share_for_load(recall, alarm, 0.5)
    reach = (
        "no share of non-supported claims keeps the load at or below 50%"
        if limit is None
        else f"the load stays at or below 50% up to a {limit:.0%} share of non-supported claims"
    )
    return [
        f"Review queue: recall {_pct(recall)}, false alarms {_pct(alarm)} of gold-supported "
        "claims. The load depends on how many claims are non-supported (recall x share + "
        "false alarms x the rest), so it is " + "; ".join(cells) + " of non-supported claims; "
        f"{reach} (even a queue with no false alarms sends recall x share)."
    ] + budget_line(data, rejected / total if total else None) + points_table(data)


def budget_line(data: dict[str, Any], share: float | None) -> list[str]:
    """What people meet when they read only the first part of the queue (``queue_budget``),
    beside the most any reading order could give at this label mix."""
    budget = data.get("queue_budget") or {}
    if not budget or not share:
        return []
    cells = []
    for key, est in budget.items():
        best = min(1.0, float(key.rstrip("%")) / 100 / share)
        cells.append(f"the first {key} of all claims hold {_with_ci(est, _pct)} of the gold "
                     f"non-supported claims (at most {best:.0%} for any order)")
    return ["", "Read in the queue's order (the claims the judge finds least likely supported "
            "first): " + "; ".join(cells) + "."]


def points_table(data: dict[str, Any]) -> list[str]:
    """The queue at other ``review_support_below`` thresholds (``queue_points``): recall,
    false alarms, and the load here and at a 10% / 20% share of non-supported claims."""
    from calibration import projected_load

    points = data.get("queue_points") or []
    if not points:
        return []
    configured = data.get("review_support_below")
    lines = [
        "", "The queue at other `review_support_below` thresholds (supported claims below it "
        "go to review; the rest of the queue is unchanged):", "",
        "| review_support_below | queue recall | false alarms | load here | load at a 10% "
        "share | load at a 20% share |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        recall, alarm = p["recall"]["value"], p["false_alarm"]["value"]
        mark = " (configured)" if configured == p["review_support_below"] else ""
        shares = " | ".join(f"{projected_load(recall, alarm, share):.0%}" for share in (0.1, 0.2))
        lines.append(
            f"| {p['review_support_below']}{mark} | {_with_ci(p['recall'], _pct)} | "
            f"{_pct(alarm)} | {_pct(p['load']['value'])} | {shares} |")
    return lines


def update_readme(readme: Path, data: dict[str, Any]) -> None:
    """Replace the text between the quality markers; refuse when they are missing."""
    replace_block(readme, QUALITY_START, QUALITY_END, quality_table(data))


def replace_block(readme: Path, start_marker: str, end_marker: str, body: str) -> None:
    """Replace the text between two markers of a generated block; refuse (and change
    nothing) when they are missing."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < 0 or end < start:
        raise EvaluationError(
            f"{readme} has no '{start_marker}' ... '{end_marker}' markers (in that order); "
            "add them where the generated block belongs. Nothing was changed.")
    new = text[:start + len(start_marker)] + "\n" + body + "\n" + text[end:]
    if new != text:
        readme.write_text(new, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m judge.evaluation",
        description="Regenerate the README quality table from `judge eval-gold --output-json`.")
    parser.add_argument("--update-readme", metavar="EVAL_JSON", type=Path, required=True)
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.update_readme.read_text(encoding="utf-8"))
        update_readme(args.readme, data)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"updated the quality table in {args.readme}")
    return 0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main())
