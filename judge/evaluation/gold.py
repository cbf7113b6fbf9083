"""Gold files: reading, validation with line-numbered errors, and provenance rules.

A gold file is JSONL in the format of the external sets in ``gold/external`` (see
``gold/README.md``): one claim per line with its sources, a label, an optional subtype and the
annotator, plus optional guideline version, stratum and weight, and what the review queue's
``judge gold export`` adds (``reviews``, ``adjudication``, ``claim_id``, ``answer_id``,
``stratum_size``, ...).

Provenance rules (the judge is measured against people, never against a model):

* Only labels given by a person (annotator ``human:<id>``) count as gold. An item whose label,
  or any review or adjudication inside it, was given by anything else (``model:...``,
  ``openai/gpt-4o``, ``judge:...``) is *refused*, with a message saying so. There is no
  switch to accept it.
* A revised label keeps the original and the reason: an item with ``revision`` must name the
  ``original_label`` and a non-empty ``reason``; an ``adjudication`` must carry its ``reason``
  and the ``original_labels`` it decided between.

Nothing here touches the store or a model: :func:`read_gold` is pure file validation.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from calibration.labels import one_of
from judge.errors import JudgeError
from judge.records.jsonl import explain, iter_lines
from judge.records.models import MAX_ANSWER_CHARS, MAX_LINE_BYTES, MAX_SOURCE_CHARS
from judge.records.strictjson import BOM, JSONLimitError, loads
from judge.review.reviews import HUMAN_PREFIX, REVIEW_SUBTYPES, is_human
from judge.verdicts import ALL_SUBTYPES, LABELS, Label

#: Every subtype a gold label may carry: the judge's subtypes, the review queue's and the
#: external datasets' (``partial_support``, ``not_a_claim``, ``generic``, ``personal``).
GOLD_SUBTYPES: tuple[str, ...] = tuple(dict.fromkeys((*ALL_SUBTYPES, *REVIEW_SUBTYPES)))

ProblemKind = Literal["error", "refused", "warning"]


class GoldSource(BaseModel):
    """A source of a gold item: plain text or a JSON document (as in answer records).

    Ids are not length-limited here (external ids can be long URLs); the evaluation maps long
    ids to short ones when it builds answer records."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1, max_length=2000)
    title: str | None = None
    text: str | None = Field(default=None, max_length=MAX_SOURCE_CHARS)
    json_doc: Any = Field(default=None, alias="json")
    version: str | None = None
    effective_date: str | None = None

    @model_validator(mode="after")
    def _text_or_json(self) -> GoldSource:
        if (self.text is None) == (self.json_doc is None):
            raise ValueError(f"source {self.id!r} needs exactly one of 'text' or 'json'")
        return self

    def content(self) -> str:
        """The source as the judge sees it (text, or the JSON document)."""
        if self.text is not None:
            return self.text
        return json.dumps(self.json_doc, ensure_ascii=False, sort_keys=True)


class GoldCitation(BaseModel):
    """A citation of the gold claim (optional; without any, every source is cited)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    quote: str | None = None
    path: str | None = None


class PersonLabel(BaseModel):
    """One person's label inside an item (``reviews`` entries, adjudication originals)."""

    model_config = ConfigDict(extra="allow")

    annotator: str = Field(min_length=1)
    label: str
    subtype: str | None = None

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        return one_of(value, LABELS, "label")


class Revision(BaseModel):
    """A label that was changed after the fact: the original and why it changed."""

    model_config = ConfigDict(extra="forbid")

    original_label: str
    original_subtype: str | None = None
    original_annotator: str | None = None
    reason: str = Field(min_length=1)
    revised_by: str | None = None
    revised_at: str | None = None

    @field_validator("original_label")
    @classmethod
    def _label(cls, value: str) -> str:
        return one_of(value, LABELS, "original_label")

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a revision needs the reason for the change")
        return value


class Adjudication(BaseModel):
    """A decision between disagreeing reviews (as exported by the review queue)."""

    model_config = ConfigDict(extra="allow")

    adjudicator: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    original_labels: list[PersonLabel] = Field(min_length=1)

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an adjudication needs its reason")
        return value


class GoldItem(BaseModel):
    """One gold-labelled claim."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1, max_length=500)
    dataset: str | None = None
    question: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS)
    answer: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS)
    sources: list[GoldSource] = Field(default_factory=list, max_length=200)
    claim: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[GoldCitation] | None = None
    label: str
    subtype: str | None = None
    original_label: Any = None
    annotator: str = Field(min_length=1)
    guideline_version: str | None = None
    generator: str | None = None
    stratum: str | None = None
    weight: float | None = None
    stratum_size: int | None = Field(default=None, ge=1)
    sample_size: int | None = Field(default=None, ge=1)
    claim_id: str | None = None
    answer_id: str | None = None
    reviews: list[PersonLabel] | None = None
    adjudication: Adjudication | None = None
    revision: Revision | None = None
    note: str | None = None

    @field_validator("claim")
    @classmethod
    def _claim(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("claim is empty")
        return value

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        return one_of(value, LABELS, "label")

    @field_validator("subtype")
    @classmethod
    def _subtype(cls, value: str | None) -> str | None:
        return None if value is None else one_of(value, GOLD_SUBTYPES, "subtype")

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value >= 1):
            raise ValueError(f"weight {value} must be a number >= 1 (stratum size / sample size)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GoldItem:
        if self.label == Label.SUPPORTED and self.subtype is not None:
            raise ValueError(f"a supported claim takes no subtype (got {self.subtype!r})")
        # a source repeated whole (same id, same content: some upstream sets list a cited
        # passage twice) is one source; the same id with other content is an error
        kept: dict[str, GoldSource] = {}
        for source in self.sources:
            first = kept.setdefault(source.id, source)
            if first is not source and first.model_dump() != source.model_dump():
                raise ValueError(f"duplicate source id {source.id!r} with different content")
        self.sources = list(kept.values())
        ids = list(kept)
        for i, citation in enumerate(self.citations or []):
            if citation.source not in ids:
                raise ValueError(f"citations[{i}] names source {citation.source!r}, which is "
                                 "not among the item's sources")
        if (self.stratum_size is None) != (self.sample_size is None):
            raise ValueError("give both stratum_size and sample_size, or neither")
        if self.stratum_size is not None and self.sample_size is not None:
            if self.sample_size > self.stratum_size:
                raise ValueError(f"sample_size {self.sample_size} > stratum_size "
                                 f"{self.stratum_size}")
            if self.stratum is None:
                raise ValueError("stratum_size given without a stratum")
        if self.weight not in (None, 1.0) and self.stratum is None:
            raise ValueError("a weight other than 1 needs the stratum it was sampled from")
        return self

    # -- provenance ------------------------------------------------------------------------

    def annotators(self) -> list[tuple[str, str]]:
        """Every (where, annotator) that gave a label in this item."""
        found = [("annotator", self.annotator)]
        found += [(f"reviews[{i}].annotator", r.annotator)
                  for i, r in enumerate(self.reviews or [])]
        if self.adjudication is not None:
            found.append(("adjudication.adjudicator", self.adjudication.adjudicator))
            found += [(f"adjudication.original_labels[{i}].annotator", r.annotator)
                      for i, r in enumerate(self.adjudication.original_labels)]
        if self.revision is not None:
            for where, who in (("revision.original_annotator", self.revision.original_annotator),
                               ("revision.revised_by", self.revision.revised_by)):
                if who:
                    found.append((where, who))
        return found

    def person_labels(self) -> list[tuple[str, str]]:
        """The (annotator, label) pairs this item holds for agreement between people: each
        review, or the item's own label when it lists no reviews."""
        if self.reviews:
            return [(r.annotator, r.label) for r in self.reviews]
        return [(self.annotator, self.label)]

    @property
    def sampled_weight(self) -> float:
        """``stratum_size / sample_size`` when given, else ``weight``, else 1."""
        if self.stratum_size and self.sample_size:
            return self.stratum_size / self.sample_size
        return self.weight if self.weight is not None else 1.0


KNOWN_FIELDS = frozenset(GoldItem.model_fields) | {
    # written by ``judge gold export`` (review queue); kept, not used for calibration
    "queue_id", "review_status",
}


@dataclass(frozen=True)
class GoldProblem:
    """A problem on one line: ``error`` (invalid), ``refused`` (not a person's label) or
    ``warning`` (kept, but worth a look)."""

    line: int
    kind: ProblemKind
    message: str
    item_id: str | None = None

    def __str__(self) -> str:
        prefix = {"error": "error", "refused": "refused", "warning": "warning"}[self.kind]
        ident = f" ({self.item_id})" if self.item_id else ""
        return f"line {self.line}{ident}: {prefix}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "kind": self.kind, "message": self.message,
                "item_id": self.item_id}


@dataclass(frozen=True)
class GoldEntry:
    line: int
    item: GoldItem


@dataclass
class GoldFile:
    """A read gold file: the valid items (with their line numbers) and every problem."""

    path: Path
    sha256: str
    entries: list[GoldEntry] = field(default_factory=list)
    problems: list[GoldProblem] = field(default_factory=list)
    lines: int = 0

    @property
    def items(self) -> list[GoldItem]:
        return [e.item for e in self.entries]

    @property
    def errors(self) -> list[GoldProblem]:
        return [p for p in self.problems if p.kind == "error"]

    @property
    def refused(self) -> list[GoldProblem]:
        return [p for p in self.problems if p.kind == "refused"]

    @property
    def warnings(self) -> list[GoldProblem]:
        return [p for p in self.problems if p.kind == "warning"]

    @property
    def ok(self) -> bool:
        """True when every line is a valid item labelled by people."""
        return not self.errors and not self.refused

    def summary(self) -> dict[str, Any]:
        items = self.items
        by_dataset: dict[str, Counter[str]] = {}
        for item in items:
            by_dataset.setdefault(item.dataset or "(none)", Counter())[item.label] += 1
        return {
            "file": str(self.path),
            "sha256": self.sha256,
            "lines": self.lines,
            "items": len(items),
            "errors": len(self.errors),
            "refused": len(self.refused),
            "warnings": len(self.warnings),
            "labels": dict(Counter(i.label for i in items)),
            "datasets": {k: dict(v) for k, v in sorted(by_dataset.items())},
            "annotators": dict(Counter(i.annotator for i in items)),
            "guideline_versions": dict(Counter(i.guideline_version or "(none)" for i in items)),
            "with_reviews": sum(1 for i in items if i.reviews),
            "adjudicated": sum(1 for i in items if i.adjudication),
            "revised": sum(1 for i in items if i.revision),
            "stratified": sum(1 for i in items if i.stratum),
        }


def not_a_person_message(where: str, annotator: str) -> str:
    return (
        f"{where} {annotator!r} is not a person: only '{HUMAN_PREFIX}<id>' labels count as gold. "
        "A label written by a model never counts as gold; remove the item "
        "or have a person label it. There is no option to accept it."
    )


def _raw_annotators(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Annotator fields of a raw (possibly invalid) item, to refuse model labels even when the
    item has other errors."""
    found: list[tuple[str, str]] = []
    if isinstance(data.get("annotator"), str):
        found.append(("annotator", data["annotator"]))
    for i, review in enumerate(data.get("reviews") or []):
        if isinstance(review, dict) and isinstance(review.get("annotator"), str):
            found.append((f"reviews[{i}].annotator", review["annotator"]))
    adjudication = data.get("adjudication")
    if isinstance(adjudication, dict) and isinstance(adjudication.get("adjudicator"), str):
        found.append(("adjudication.adjudicator", adjudication["adjudicator"]))
    return found


def parse_gold_line(raw: bytes, line: int) -> tuple[GoldItem | None, list[GoldProblem]]:
    """Parse and check one line. Returns the item (None when invalid or refused) and the
    problems found on the line."""
    if len(raw) > MAX_LINE_BYTES:
        return None, [GoldProblem(line, "error", f"line is {len(raw)} bytes; the limit is "
                                                 f"{MAX_LINE_BYTES}")]
    try:
        text = raw.decode("utf-8")
        data = loads(text.removeprefix(BOM) if line == 1 else text)  # a BOM begins a file only
    except UnicodeDecodeError as exc:
        return None, [GoldProblem(line, "error", f"not valid UTF-8 (byte {exc.start})")]
    except JSONLimitError as exc:
        return None, [GoldProblem(line, "error", str(exc))]
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, [GoldProblem(line, "error", f"cannot read the line: {type(exc).__name__}")]
    if not isinstance(data, dict):
        return None, [GoldProblem(line, "error",
                                  f"expected a JSON object, got {type(data).__name__}")]
    item_id = data.get("id") if isinstance(data.get("id"), str) else None
    problems = [
        GoldProblem(line, "refused", not_a_person_message(where, who), item_id)
        for where, who in _raw_annotators(data) if not is_human(who)
    ]
    if "\\u0000" in text.lower():  # raw NUL is refused by loads; a label on such text is kept
        problems.append(GoldProblem(
            line, "warning", "a text holds a NUL character (U+0000, written \\u0000): the "
            "person's label is kept, but NUL is not text, so no judge reads it (eval-gold "
            "reports it not judged); remove it from the file", item_id))
    try:
        item = GoldItem.model_validate(data)
    except ValidationError as exc:
        return None, [*problems, GoldProblem(line, "error", explain(exc, "item"), item_id)]
    reported = {where for where, _ in _raw_annotators(data)}
    for where, who in item.annotators():
        if where in reported or is_human(who):
            continue
        if where == "revision.original_annotator":
            problems.append(GoldProblem(
                line, "warning", f"the original label was given by {who!r}, not a person; the "
                "current label is a person's revision and is used", item_id))
        else:
            problems.append(GoldProblem(line, "refused", not_a_person_message(where, who),
                                        item_id))
    repeated = len(data.get("sources") or []) - len(item.sources)
    if repeated:
        problems.append(GoldProblem(line, "warning", f"{repeated} source(s) repeated whole "
                                    "(same id and content) are read once", item_id))
    unknown = sorted(set(data) - KNOWN_FIELDS)
    if unknown:
        problems.append(GoldProblem(line, "warning", f"unknown field(s) {unknown} are ignored",
                                    item_id))
    if item.reviews and not any(r.annotator == item.annotator and r.label == item.label
                                for r in item.reviews) and item.adjudication is None:
        problems.append(GoldProblem(
            line, "warning", "the item's label is none of its reviews' labels and there is no "
            "adjudication explaining it", item_id))
    if any(p.kind == "refused" for p in problems):
        return None, problems
    return item, problems


def read_gold(path: Path) -> GoldFile:
    """Read and validate a gold file. Never raises for bad content: every problem is listed
    with its line number (a missing file raises ``FileNotFoundError``)."""
    path = Path(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    gold = GoldFile(path=path, sha256=digest)
    seen: dict[str, int] = {}
    for line, raw in iter_lines(path):
        gold.lines += 1
        try:
            item, problems = parse_gold_line(raw, line)
        except Exception as exc:  # one line never stops the file: it is that line's error
            item, problems = None, [GoldProblem(
                line, "error", f"cannot read the line: {type(exc).__name__}: {exc}"[:500])]
        gold.problems += problems
        if item is None:
            continue
        if item.id in seen:
            gold.problems.append(GoldProblem(
                line, "error", f"duplicate id {item.id!r} (first on line {seen[item.id]})",
                item.id))
            continue
        seen[item.id] = line
        gold.entries.append(GoldEntry(line, item))
    if gold.lines == 0:
        gold.problems.append(GoldProblem(0, "error", "the file holds no gold items"))
    return gold


class GoldRejected(JudgeError, ValueError):
    """A gold file that cannot be used; the message lists the problems with line numbers."""

    def __init__(self, gold: GoldFile, limit: int = 20) -> None:
        bad = gold.refused + gold.errors
        head = (f"gold file {gold.path} cannot be used: {len(gold.refused)} item(s) refused "
                f"(not labelled by a person), {len(gold.errors)} invalid")
        lines = [str(p) for p in bad[:limit]]
        if len(bad) > limit:
            lines.append(f"... and {len(bad) - limit} more (run `judge gold-check {gold.path}`)")
        super().__init__("\n".join([head, *lines]))
        self.gold = gold


def load_gold(path: Path) -> GoldFile:
    """Read a gold file for use; raise :class:`GoldRejected` unless every line is valid and
    labelled by people. Partial use would silently change what the figures rest on."""
    gold = read_gold(path)
    if not gold.ok:
        raise GoldRejected(gold)
    return gold
