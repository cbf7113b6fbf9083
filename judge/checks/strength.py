"""Evidence strength: a number computed by the program from the checks and the located
evidence, never by a model (no model reports its own confidence anywhere)."""

from __future__ import annotations

from collections.abc import Sequence

from judge.checks.jsonpath import resolve_json_path, value_text
from judge.records import AnswerRecord, Source
from judge.split.citations import strip_markers
from judge.text import (
    best_passages,
    lexical_overlap,
)
from judge.verdicts import Check, Evidence

# == strength ======================================================================================

W_LOCATED, W_OVERLAP, W_NUMBERS = 0.35, 0.45, 0.20
FAILED_CHECK_CAP = 0.5


def _located_texts(
    evidence: Sequence[Evidence], checks: Sequence[Check], record: AnswerRecord
) -> list[str]:
    """Texts the program located exactly: found quotes (judge evidence and citations) and
    resolved JSON values."""
    texts: list[str] = []
    for item in evidence:
        source = record.source(item.source_id)
        if not item.found or source is None:
            continue
        if item.start is not None and item.end is not None:
            texts.append(source.content[item.start : item.end])
        elif item.path and source.is_json:
            ok, value = resolve_json_path(source.json_doc, item.path)
            texts.extend([value_text(value)] if ok else [])
    for check in checks:
        if check.outcome != "pass":
            continue
        source = record.source(str(check.detail.get("source")))
        if check.name == "quote_found" and source is not None:
            texts.append(source.content[check.detail["start"] : check.detail["end"]])
        elif check.name == "json_path_resolves":
            texts.append(value_text(check.detail.get("value")))
    return texts


def _referenced_sources(
    evidence: Sequence[Evidence], checks: Sequence[Check], record: AnswerRecord
) -> list[Source]:
    ids = [e.source_id for e in evidence] + [
        str(c.detail["source"]) for c in checks if c.outcome == "pass" and "source" in c.detail
    ]
    return [s for s in record.sources if s.id in ids]


def _best_passage_overlap(claim: str, sources: Sequence[Source]) -> float:
    best = 0.0
    for source in sources:
        for start, end, _ in best_passages(claim, source.content, k=1, window=2):
            best = max(best, lexical_overlap(claim, source.content[start:end]))
    return best


def strength(
    claim_text: str,
    evidence: Sequence[Evidence],
    checks: Sequence[Check],
    record: AnswerRecord,
) -> float:
    """Evidence strength in [0, 1], computed by the program alone (never by a model).

    ``L`` (located) = 1 when some evidence was located exactly: a judge or citation quote
    found verbatim in its source, or a JSON path that resolved; else 0.
    ``O`` (overlap) = :func:`judge.text.lexical_overlap` of the claim (markers stripped) with
    the located texts joined; when nothing was located, with the best two-sentence passage
    (:func:`judge.text.best_passages`) of the sources the evidence or passing checks name.
    ``N`` (numbers) = 1 when ``numbers_match`` passed, 0 when it failed; left out (weights
    rescaled) when it was skipped or absent.

        strength = (0.35·L + 0.45·O [+ 0.20·N]) / (0.80 [+ 0.20])

    and capped at 0.5 when any check failed (unknown citation, invented quote, unresolved
    path, missing quantity). Rounded to 4 decimals.
    """
    claim = strip_markers(claim_text, record.sources)
    located = _located_texts(evidence, checks, record)
    if located:
        overlap = lexical_overlap(claim, "\n".join(located))
    else:
        overlap = _best_passage_overlap(claim, _referenced_sources(evidence, checks, record))
    parts = [(W_LOCATED, 1.0 if located else 0.0), (W_OVERLAP, overlap)]
    numbers = next((c for c in checks if c.name == "numbers_match"), None)
    if numbers is not None and numbers.outcome != "skip":
        parts.append((W_NUMBERS, 1.0 if numbers.outcome == "pass" else 0.0))
    score = sum(w * v for w, v in parts) / sum(w for w, _ in parts)
    if any(c.failed for c in checks):
        score = min(score, FAILED_CHECK_CAP)
    return round(max(0.0, min(1.0, score)), 4)
