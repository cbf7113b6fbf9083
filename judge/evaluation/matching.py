"""Gold items matched to stored verdicts: gold items as answer records (so a run judges exactly
the gold claims), the store's verdicts indexed by version, claim id and claim text + sources,
and the placing of every gold item (matched, refused, not judged, duplicate)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.evaluation.gold import GoldEntry, GoldItem
from judge.hashing import content_hash
from judge.records import AnswerRecord
from judge.records.models import DOMAIN_PATTERN, MAX_ID_CHARS
from judge.split.claims import claim_ids
from judge.store import Store

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
    #: answer id -> the gold items' ``dataset``: the domain whose rule decides the answer
    #: (``JudgeConfig.domain_rules``). Kept apart from the records so their content and ids
    #: stay what they were before domains existed: stores that already hold them keep
    #: matching, and their stored calls are reused.
    domains: dict[str, str] = field(default_factory=dict)

    def jsonl(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                       for r in self.records)


def short_source_id(source_id: str, taken: set[str]) -> str:
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
    Each answer's domain (its items' ``dataset``) is in ``domains``, not in the record.
    """
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
            short = short_source_id(s.id, taken)
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
        ids = claim_ids(answer_id, [c["text"] for c in claims])
        for e, position in zip(group, positions, strict=True):
            conv.refs[e.item.id] = ClaimRef(answer_id, ids[position])
        if answer_id not in seen_records:
            seen_records[answer_id] = record
            conv.records.append(record)
            if first.dataset and re.fullmatch(DOMAIN_PATTERN, first.dataset):
                conv.domains[answer_id] = first.dataset
    return conv


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
        self.generators = store.answer_generators()

    def fingerprints(self) -> dict[str, str]:
        if self._fingerprints is None:
            contents: dict[str, list[str]] = {}
            for row in self.store.source_rows():
                contents.setdefault(row["answer_id"], []).append(
                    _source_content(row["text"], row["json"]))
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
        return self.store.refused_reason(answer_id, version)


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
