"""Evidence located by the program: the source passages that best cover a claim.

Used by the ``per_claim`` strategy so a small model reads a short excerpt instead of whole
sources (faster, and less to get lost in), and recorded as the verdict's evidence with
exact character offsets.
"""

from __future__ import annotations

from judge.records import AnswerRecord
from judge.text import best_passages
from judge.verdicts import Evidence

WHOLE_SOURCE_CHARS = 700
EXCERPT_BUDGET_CHARS = 1500
FALLBACK_CHARS = 400


def locate_excerpts(
    claim: str, record: AnswerRecord, budget: int = EXCERPT_BUDGET_CHARS
) -> list[Evidence]:
    """Best-covering passages across the record's sources, best first, within ``budget``
    characters. Short sources are taken whole. With no lexical overlap anywhere, the
    beginning of each source is given, so the model still sees what the sources are about."""
    scored: list[tuple[float, str, int, int]] = []
    for source in record.sources:
        content = source.content
        if len(content) <= WHOLE_SOURCE_CHARS:
            passages = best_passages(claim, content, k=1, window=1)
            score = passages[0][2] if passages else 0.0
            scored.append((score, source.id, 0, len(content)))
            continue
        for start, end, score in best_passages(claim, content, k=3, window=2):
            scored.append((score, source.id, start, end))
    scored.sort(key=lambda item: -item[0])
    chosen: list[Evidence] = []
    used = 0
    for score, source_id, start, end in scored:
        if score <= 0 and chosen:
            break
        length = end - start
        if chosen and used + length > budget:
            continue
        text = record.source(source_id).content[start:end]  # type: ignore[union-attr]
        if length > budget:
            end, text = start + budget, text[:budget]
        chosen.append(Evidence(source_id=source_id, quote=text, found=True, start=start, end=end))
        used += len(text)
    if not chosen or all(s <= 0 for s, *_ in scored):
        chosen = [
            Evidence(
                source_id=s.id,
                quote=s.content[:FALLBACK_CHARS],
                found=True,
                start=0,
                end=min(len(s.content), FALLBACK_CHARS),
            )
            for s in record.sources[:3]
        ]
    return chosen


def best_sentences(claim: str, record: AnswerRecord, k: int) -> list[tuple[float, str, int, int]]:
    """``(score, source id, start, end)`` of the ``k`` single source sentences that best cover
    the claim (:func:`judge.text.best_passages` scores), across all sources, best first (ties:
    earlier source, then earlier sentence); sentences sharing no word with it are left out."""
    scored: list[tuple[float, str, int, int]] = []
    for source in record.sources:
        for start, end, score in best_passages(claim, source.content, k=k, window=1):
            scored.append((score, source.id, start, end))
    scored.sort(key=lambda item: -item[0])
    return scored[:k]




#: the budget of an answer's shared excerpts (``excerpts = "answer"``)
ANSWER_BUDGET_CHARS = 2500


def shared_excerpts(
    located: list[list[Evidence]], record: AnswerRecord, budget: int = ANSWER_BUDGET_CHARS
) -> list[Evidence]:
    """One set of excerpts for all the claims of an answer: each claim's best excerpt first,
    then each claim's second, ... (overlapping ones merged) while they fit ``budget``; given
    in source order, so the prompts of the answer's claims begin the same way."""
    spans: list[tuple[str, int, int]] = []
    used = 0
    depth = max((len(x) for x in located), default=0)
    for rank in range(depth):
        for found in located:
            if rank >= len(found) or found[rank].start is None or found[rank].end is None:
                continue
            e = found[rank]
            start, end = int(e.start or 0), int(e.end or 0)
            merged = [(s, a, b) for s, a, b in spans
                      if s == e.source_id and a < end and start < b]
            if merged:
                start = min(start, *(a for _, a, _ in merged))
                end = max(end, *(b for _, _, b in merged))
            grown = (end - start) - sum(b - a for _, a, b in merged)
            if spans and used + grown > budget:
                continue
            spans = [x for x in spans if x not in merged] + [(e.source_id, start, end)]
            used += grown
    order = {s.id: i for i, s in enumerate(record.sources)}
    spans.sort(key=lambda x: (order.get(x[0], len(order)), x[1]))
    out = []
    for source_id, start, end in spans:
        source = record.source(source_id)
        if source is not None:
            out.append(Evidence(source_id=source_id, quote=source.content[start:end],
                                found=True, start=start, end=end))
    return out


def excerpt_data(located: list[Evidence]) -> list[dict[str, str]]:
    """Program-located excerpts as the prompt templates take them."""
    return [{"source_id": e.source_id, "text": e.quote or ""} for e in located]
