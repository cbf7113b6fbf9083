"""The deterministic checks of one claim: exact and cheap, they run before the model.

Each check returns a :class:`judge.verdicts.Check` with ``name``, ``target`` (``citation[i]``,
``evidence[i]`` or ``claim``), ``outcome`` (``pass``/``fail``/``skip``) and a JSON-able
``detail``. ``skip`` means "could not be decided here" (e.g. no quantities, no cited
evidence), never "fine".

- ``citation_exists``: the cited source id exists in the record.
- ``json_path_resolves``: the citation's JSON path resolves in the cited JSON source.
- ``quote_found``: the quote occurs verbatim (after normalisation) in the cited source.
- ``numbers_match``: every quantity of the claim (numbers, percentages, dates, times,
  versions, identifiers with digits) occurs in the cited evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from judge.checks.jsonpath import JsonPathError, resolve_json_path, value_text, walk_json_path
from judge.checks.quantities import EvidenceIndex, extract_quantities, quantity_in_evidence
from judge.records import AnswerRecord, Citation, Source
from judge.split.citations import strip_markers
from judge.text import (
    best_passages,
    find_quote,
    quote_too_short,
)
from judge.verdicts import Check, Evidence

MAX_DETAIL_CHARS = 200


def _clip(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# == evidence text =================================================================================


def _cited_text(citation: Citation, source: Source) -> str:
    """The verified part of a source a citation points to: the quote's span when it is found,
    else the resolved JSON value, else the whole source."""
    content = source.content
    if citation.quote:
        span = find_quote(citation.quote, content)
        if span:
            return content[span[0] : span[1]]
    if citation.path and source.is_json:
        ok, value = resolve_json_path(source.json_doc, citation.path)
        if ok:
            return value_text(value)
    return content


def evidence_text(citations: Sequence[Citation], record: AnswerRecord) -> str:
    """The text the claim's citations point to, one piece per line: a found quote's span in
    the source (an unverified quote is never evidence), else the resolved JSON value when a
    path resolves, else the whole source content (JSON pretty-printed). Citations of
    unknown sources contribute nothing."""
    pieces: list[str] = []
    for citation in citations:
        source = record.source(citation.source)
        if source is not None:
            piece = _cited_text(citation, source)
            if piece not in pieces:
                pieces.append(piece)
    return "\n".join(pieces)


# == checks ========================================================================================


def citation_exists(source_id: str, record: AnswerRecord, target: str = "claim") -> Check:
    """Pass when a source with ``source_id`` is in the record."""
    if record.source(source_id) is not None:
        return Check(name="citation_exists", target=target, outcome="pass",
                     detail={"source": source_id})
    known = [s.id for s in record.sources][:20]
    return Check(name="citation_exists", target=target, outcome="fail",
                 detail={"source": source_id, "reason": f"no source with id {source_id!r}",
                         "known_sources": known})


def json_path_resolves(
    source_id: str, path: str, record: AnswerRecord, target: str = "claim"
) -> Check:
    """Pass when ``path`` resolves in the JSON source; fail on a text source or a path that
    does not resolve (detail names the failing segment); skip when the source is unknown."""
    def check(outcome: Literal["pass", "fail", "skip"], **detail: Any) -> Check:
        return Check(name="json_path_resolves", target=target, outcome=outcome,
                     detail={"source": source_id, "path": path, **detail})

    source = record.source(source_id)
    if source is None:
        return check("skip", reason=f"no source with id {source_id!r}")
    if not source.is_json:
        return check("fail", reason=f"source {source_id!r} is a text source, not JSON")
    try:
        value = walk_json_path(source.json_doc, path)
    except JsonPathError as exc:
        return check("fail", reason=exc.reason, at=exc.at, segment=exc.segment)
    # always text (a number as its JSON form), so the detail has one type across verdicts
    return check("pass", value=_clip(value_text(value)))


def quote_found(source_id: str, quote: str, record: AnswerRecord, target: str = "claim") -> Check:
    """Pass when ``quote`` occurs in the source after normalisation (see
    :func:`judge.text.find_quote`); detail has ORIGINAL ``start``/``end`` offsets in the
    source content, or a ``reason`` and the ``nearest`` passage. Skip when the source is
    unknown (``citation_exists`` fails it)."""
    detail: dict[str, Any] = {"source": source_id, "quote": _clip(quote)}
    source = record.source(source_id)
    if source is None:
        return Check(name="quote_found", target=target, outcome="skip",
                     detail={**detail, "reason": f"no source with id {source_id!r}"})
    if quote_too_short(quote):
        return Check(name="quote_found", target=target, outcome="fail",
                     detail={**detail, "reason": "quote is empty or shorter than 2 characters"})
    span = find_quote(quote, source.content)
    if span is not None:
        return Check(name="quote_found", target=target, outcome="pass",
                     detail={**detail, "start": span[0], "end": span[1]})
    detail["reason"] = f"quote not found in source {source_id!r}"
    nearest = best_passages(quote, source.content, k=1)
    if nearest:
        detail["nearest"] = {"start": nearest[0][0], "end": nearest[0][1], "score": nearest[0][2]}
    return Check(name="quote_found", target=target, outcome="fail", detail=detail)


def numbers_match(claim_text: str, citations: Sequence[Citation], record: AnswerRecord) -> Check:
    """Every quantity of the claim must occur in the cited evidence (:func:`evidence_text`).

    Numbers compare numerically (``61`` = JSON ``61.0``, ``1,000`` = ``1000`` = ``1k``,
    ``三次`` = ``3 次``); a unit missing on either side is lenient, different units of one
    dimension are converted when exact (``1.5 秒`` = ``1500 ms``), otherwise units must agree
    (``5 GB`` ≠ ``5 MB``). A percentage also matches its fraction (``61%`` = ``0.61``). Dates
    match in any format, a year alone matches a date in that year. Versions must occur as
    versions (``6.3`` ≠ ``6.2``, ``Python 3.11`` ≠ ``3.1``); identifiers with digits must occur
    (ignoring case and ``-_./:``). Citation markers and list markers are not quantities.

    Outcome: ``skip`` when the claim has no quantities or cites no known source, ``fail`` when
    any quantity is missing, else ``pass``; detail lists ``matched`` and ``missing`` surfaces.
    """
    claim = strip_markers(claim_text, record.sources)
    quantities = extract_quantities(claim)
    if not quantities:
        return Check(name="numbers_match", outcome="skip",
                     detail={"matched": [], "missing": [], "reason": "no quantities in claim"})
    text = evidence_text(citations, record)
    surfaces = [q.text for q in quantities]
    if not text:
        return Check(name="numbers_match", outcome="skip",
                     detail={"matched": [], "missing": [], "quantities": surfaces,
                             "reason": "no cited source to compare with"})
    index = EvidenceIndex.of(text)
    matched = [q.text for q in quantities if quantity_in_evidence(q, index)]
    missing = [q.text for q in quantities if not quantity_in_evidence(q, index)]
    return Check(name="numbers_match", outcome="fail" if missing else "pass",
                 detail={"matched": matched, "missing": missing})


def run_claim_checks(
    claim_text: str, citations: Sequence[Citation], record: AnswerRecord
) -> list[Check]:
    """All deterministic checks of one claim: per citation ``citation_exists``, then
    ``json_path_resolves`` (when it has a path) and ``quote_found`` (when it has a quote),
    all with target ``citation[i]``; then ``numbers_match`` on the claim."""
    checks: list[Check] = []
    for i, citation in enumerate(citations):
        target = f"citation[{i}]"
        checks.append(citation_exists(citation.source, record, target))
        if citation.path is not None:
            checks.append(json_path_resolves(citation.source, citation.path, record, target))
        if citation.quote is not None:
            checks.append(quote_found(citation.source, citation.quote, record, target))
    checks.append(numbers_match(claim_text, citations, record))
    return checks


def check_evidence_quotes(
    evidence: Sequence[Evidence], record: AnswerRecord
) -> tuple[list[Evidence], list[Check]]:
    """Verify the judge's evidence. Returns copies with ``found``/``start``/``end`` set (offsets
    in the source content) and the checks, target ``evidence[i]``: ``citation_exists`` (only
    when the source id is unknown; ``found`` is then False), ``json_path_resolves`` for a path,
    ``quote_found`` for a quote. Evidence with neither keeps ``found=None``."""
    out: list[Evidence] = []
    checks: list[Check] = []
    for i, item in enumerate(evidence):
        target = f"evidence[{i}]"
        if record.source(item.source_id) is None:
            checks.append(citation_exists(item.source_id, record, target))
            out.append(item.model_copy(update={"found": False, "start": None, "end": None}))
            continue
        update: dict[str, Any] = {}
        if item.path is not None:
            check = json_path_resolves(item.source_id, item.path, record, target)
            checks.append(check)
            update["found"] = check.outcome == "pass"
        if item.quote is not None:
            check = quote_found(item.source_id, item.quote, record, target)
            checks.append(check)
            update["found"] = check.outcome == "pass" and update.get("found", True)
            update["start"] = check.detail.get("start")
            update["end"] = check.detail.get("end")
        out.append(item.model_copy(update=update))
    return out, checks


def evidence_numbers_check(
    claim_text: str, evidence: list[Evidence], record: AnswerRecord
) -> Check:
    """Numbers, dates and versions of a claim the judge called supported must occur in the
    evidence it quoted (found quotes only), not merely somewhere in the cited source."""
    found = [Citation(source=e.source_id, quote=e.quote) for e in evidence if e.found and e.quote]
    if not found:
        return Check(
            name="evidence_numbers_match",
            target="evidence",
            outcome="skip",
            detail={"reason": "no verified evidence quote"},
        )
    check = numbers_match(claim_text, found, record)
    return check.model_copy(update={"name": "evidence_numbers_match", "target": "evidence"})
