"""Input models: answer records, sources, citations and given claims, with the limits that keep
one bad record from exhausting memory or the model's context. Imports only :mod:`judge.hashing`."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from judge.hashing import content_hash
from judge.records.strictjson import JSONLimitError, check_value

# Deliberate bounds: generous for real RAG answers, small enough that one bad line
# cannot exhaust memory or the model's context.
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_ANSWER_CHARS = 100_000
MAX_SOURCE_CHARS = 2_000_000
MAX_SOURCES = 200
MAX_CLAIMS = 500
MAX_ID_CHARS = 200
#: Source ids are often URLs (a cited page), longer than an answer id needs to be.
MAX_SOURCE_ID_CHARS = 2000
#: A domain tag (and the name of a per-domain decision rule in a judge config): a letter or
#: digit, then letters, digits and ``_ . : -`` (``begin``, ``support-tickets``, ``review:q1``).
DOMAIN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$"

#: Characters that render as nothing although they are neither spaces nor format characters:
#: Hangul fillers, the braille blank, and Unicode's default-ignorable marks (the combining
#: grapheme joiner, Khmer's inherent vowels, Mongolian free variation selectors and the
#: variation selectors). Text made only of these, whitespace (U+3000 and every other Unicode
#: space), format characters (zero-width spaces and joiners, BOMs, the soft hyphen,
#: direction marks) and control characters is blank.
_INVISIBLE = frozenset(
    "\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0))))


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: whitespace, zero-width and other format or control
    characters, and characters that render as nothing (:data:`_INVISIBLE`), only."""
    return all(
        ch.isspace() or ch in _INVISIBLE or unicodedata.category(ch) in ("Cf", "Cc", "Zs")
        for ch in text
    )


def holds_no_values(doc: Any) -> bool:
    """True when a JSON document states nothing: no number, boolean or string that
    :func:`is_blank` does not call blank, at any depth. ``null``, blank strings and empty
    objects or arrays hold no value, and keys are names, not values: ``{}``, ``[]``,
    ``{"a": []}``, ``{"a": null}`` and ``{"a": {"b": " "}}`` are empty; ``{"a": 0}`` and
    ``[false]`` are not."""
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            if not is_blank(value):
                return False
        elif value is not None:  # a number or a boolean
            return False
    return True


def _check_id(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if is_blank(value):
        raise ValueError(f"{what} is empty or invisible (whitespace / zero-width characters)")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValueError(f"{what} contains control characters")
    return value


class Citation(BaseModel):
    """A pointer from a claim to evidence: a source id, optionally a quote or a JSON path."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1, max_length=MAX_SOURCE_ID_CHARS)
    quote: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS)
    path: str | None = Field(default=None, max_length=1000)

    @field_validator("source")
    @classmethod
    def _visible_source(cls, value: str) -> str:
        return _check_id(value, "citation source") or value


def _coerce_citation(value: Any) -> Any:
    return {"source": value} if isinstance(value, str) else value


class Source(BaseModel):
    """A source document: plain text, or a JSON document cited by JSON path."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1, max_length=MAX_SOURCE_ID_CHARS)
    title: str | None = Field(default=None, max_length=2000)
    text: str | None = Field(default=None, max_length=MAX_SOURCE_CHARS)
    json_doc: Any = Field(default=None, alias="json")
    version: str | None = Field(default=None, max_length=200)
    effective_date: str | None = Field(default=None, max_length=50)

    @field_validator("id")
    @classmethod
    def _visible_id(cls, value: str) -> str:
        return _check_id(value, "source id") or value

    @model_validator(mode="after")
    def _text_or_json(self) -> Source:
        if (self.text is None) == (self.json_doc is None):
            raise ValueError(f"source {self.id!r} needs exactly one of 'text' or 'json'")
        if self.json_doc is not None:
            try:  # what the JSONL reader checks before parsing, for values built in memory
                check_value(self.json_doc, f"source {self.id!r}: json")
            except JSONLimitError as exc:
                raise ValueError(str(exc)) from None
            if len(json.dumps(self.json_doc)) > MAX_SOURCE_CHARS:
                raise ValueError(
                    f"source {self.id!r}: json document exceeds {MAX_SOURCE_CHARS} chars")
        return self

    @property
    def is_json(self) -> bool:
        return self.json_doc is not None

    @property
    def is_empty(self) -> bool:
        """The source states nothing (blank text, or a JSON document that holds no value):
        nothing can be supported by it, as by a missing source (docs/records.md)."""
        if self.text is not None:
            return is_blank(self.text)
        return holds_no_values(self.json_doc)

    @property
    def content(self) -> str:
        """The text a model sees: the text, or the JSON document pretty-printed."""
        if self.text is not None:
            return self.text
        return json.dumps(self.json_doc, ensure_ascii=False, indent=1, sort_keys=False)


class ClaimInput(BaseModel):
    """A claim given pre-split in the input, with its own citations: used as given (and
    checked), never re-split."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    citations: list[Citation] = Field(default_factory=list, max_length=100)

    @field_validator("citations", mode="before")
    @classmethod
    def _citations(cls, value: Any) -> Any:
        return [_coerce_citation(v) for v in value] if isinstance(value, list) else value

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("claim text is empty or invisible (whitespace / zero-width)")
        return value


class AnswerRecord(BaseModel):
    """One generated answer with its sources. Only ``answer`` and ``sources`` are required."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    question: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS)
    answer: str = Field(max_length=MAX_ANSWER_CHARS)
    sources: list[Source] = Field(min_length=1, max_length=MAX_SOURCES)
    claims: list[ClaimInput] | None = Field(default=None, max_length=MAX_CLAIMS)
    generator: str | None = Field(default=None, max_length=500)
    #: A reference (expected) answer, as RAGAS and DeepEval datasets carry one: kept with the
    #: record and exported again, never used for judging (claims are judged against the
    #: sources). Left out of the record's JSON when absent, so records without one keep
    #: their content hash.
    reference: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS,
                                  exclude_if=lambda v: v is None)
    #: What an answer without any citation marker cites. Unset (the default): nothing, so
    #: each claim is flagged ``missing_citation`` (a run sets it on an answer that cites
    #: nothing under its ``uncited`` setting, judge.split.uncited). ``"all_sources"``: every
    #: sentence cites every source, as a RAGAS or DeepEval row means its retrieved contexts
    #: (the peer imports set it). Answers with markers are read by their markers either
    #: way. Left out of the record's JSON when unset, so records without it keep their
    #: content hash.
    uncited: Literal["all_sources"] | None = Field(default=None, exclude_if=lambda v: v is None)
    #: Texts an importer repaired (mojibake, :mod:`judge.records.mojibake`): field path
    #: (``answer``, ``sources.C1.text``) -> the text as it came. Left out of the record's JSON
    #: when empty, so records without repairs keep their content hash.
    repaired: dict[str, str] | None = Field(default=None, max_length=1000,
                                            exclude_if=lambda v: v is None)
    expected_status: Literal["answered", "partial", "insufficient"] | None = None
    #: Optional domain tag: a judge config with a rule fitted for this domain
    #: (``[judge.domain_rules.<domain>]``, see ``judge fit --domain``) decides this answer's
    #: claims with that rule. Part of the record's content (and of its id when none is
    #: given) only when set, so records without one keep their ids and hashes.
    domain: str | None = Field(default=None, pattern=DOMAIN_PATTERN)

    @field_validator("answer")
    @classmethod
    def _answer_not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("answer is empty or invisible (whitespace / zero-width characters)")
        return value

    @field_validator("id")
    @classmethod
    def _visible_id(cls, value: str | None) -> str | None:
        return _check_id(value, "id")

    @field_validator("generator")
    @classmethod
    def _generator(cls, value: str | None) -> str | None:
        """An empty or invisible generator is a missing one (counted, see
        ``require_generator``), never a name that matches no model."""
        return None if value is None or is_blank(value) else value

    @model_validator(mode="after")
    def _ids(self) -> AnswerRecord:
        seen: set[str] = set()
        for source in self.sources:
            if source.id in seen:
                raise ValueError(f"duplicate source id {source.id!r}")
            seen.add(source.id)
        if self.claims is not None and not self.claims:
            raise ValueError("'claims' is present but empty; omit it to let the judge split")
        if self.id is None:
            self.id = "a-" + content_hash(self.model_dump(mode="json", by_alias=True))[:16]
        return self

    @model_serializer(mode="wrap")
    def _without_unset_domain(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if isinstance(data, dict) and data.get("domain") is None:
            data.pop("domain", None)
        return data

    @property
    def answer_id(self) -> str:
        assert self.id is not None
        return self.id

    def source(self, source_id: str) -> Source | None:
        return next((s for s in self.sources if s.id == source_id), None)
