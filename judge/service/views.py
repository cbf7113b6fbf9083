"""What a reviewer sees for one queue item: the claim, its answer with the claim's sentence
marked, the sources with quoted or cited spans, and the deterministic checks on citations.

Blind by default: nothing here carries the judge's label, subtype, rationale, reasons or the
judge's own evidence quotes (checks on ``evidence[i]`` come from the judge's output). With
``reveal`` a ``judge`` section is added and the judge's evidence spans are marked too.

Spans are ``{start, end, kind}`` over the plain text; :func:`segments` cuts the text at span
boundaries so a template can escape every piece and wrap marked pieces in ``<mark>``: no
HTML is ever built from text.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

from judge.records import AnswerRecord
from judge.review.queue import item_verdict
from judge.store import Store
from judge.text import best_passages, find_quote, lexical_overlap, split_sentences

#: Sources longer than this are shown as excerpts around their marked spans.
DISPLAY_CHARS = 30_000
EXCERPT_CONTEXT = 1_500
#: A cited source without a quoted span gets its closest passage to the claim marked (computed
#: by lexical overlap, not by the judge) when it scores at least this, in sources up to
#: PASSAGE_MAX_CHARS long.
PASSAGE_MIN_SCORE = 0.3
PASSAGE_MAX_CHARS = 300_000

CHECK_TEXT = {
    "citation_exists": "cited source exists",
    "quote_found": "quoted text found in the source",
    "json_path_resolves": "cited JSON path resolves",
    "numbers_match": "numbers, dates and units occur in the cited text",
}


@dataclass(frozen=True)
class Segment:
    text: str
    kinds: tuple[str, ...] = ()

    @property
    def css(self) -> str:
        return " ".join(f"hl-{k}" for k in self.kinds)


def segments(text: str, spans: list[dict[str, Any]], lo: int = 0, hi: int | None = None
             ) -> list[Segment]:
    """Cut ``text[lo:hi]`` at every span boundary; each piece lists the span kinds covering it."""
    hi = len(text) if hi is None else hi
    cuts = {lo, hi}
    for s in spans:
        cuts.update(x for x in (s["start"], s["end"]) if lo < x < hi)
    points = sorted(cuts)
    out = []
    for a, b in zip(points, points[1:], strict=False):
        kinds = tuple(sorted({s["kind"] for s in spans if s["start"] <= a and b <= s["end"]}))
        out.append(Segment(text[a:b], kinds))
    return out


def excerpts(text: str, spans: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Windows of a long text to display: around each span, merged; else the beginning."""
    if len(text) <= DISPLAY_CHARS:
        return [(0, len(text))]
    windows: list[tuple[int, int]] = []
    for s in sorted(spans, key=lambda s: s["start"]):
        a, b = max(0, s["start"] - EXCERPT_CONTEXT), min(len(text), s["end"] + EXCERPT_CONTEXT)
        if windows and a <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(b, windows[-1][1]))
        else:
            windows.append((a, b))
    return windows[:20] or [(0, DISPLAY_CHARS)]


def _norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split()).casefold()


def claim_span(answer: str, claim: str) -> tuple[int, int] | None:
    """Where the claim sits in the answer: the claim verbatim, else the sentence that
    contains it (normalised) or overlaps it most."""
    if not claim.strip():
        return None
    if _norm(claim) == _norm(answer):
        return 0, len(answer)
    exact = find_quote(claim, answer)
    if exact:
        return exact
    best, best_score = None, 0.0
    target = _norm(claim)
    for start, end in split_sentences(answer):
        sentence = answer[start:end]
        score = 1.0 if target and target in _norm(sentence) else lexical_overlap(claim, sentence)
        if score > best_score:
            best, best_score = (start, end), score
    return best if best_score >= 0.2 else None


def json_spans(doc: Any) -> tuple[str, dict[tuple[str | int, ...], tuple[int, int]]]:
    """The document as :attr:`judge.records.Source.content` prints it (``json.dumps`` with
    ``indent=1``), and where each value sits in that text, by its path of keys."""
    spans: dict[tuple[str | int, ...], tuple[int, int]] = {}
    parts: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)

    def dump(value: Any, level: int, path: tuple[str | int, ...]) -> None:
        start = size
        pad = " " * (level + 1)
        if isinstance(value, dict) and value:
            put("{\n")
            for i, (key, item) in enumerate(value.items()):
                put(("," + "\n" if i else "") + pad + json.dumps(str(key), ensure_ascii=False)
                    + ": ")
                dump(item, level + 1, (*path, str(key)))
            put("\n" + " " * level + "}")
        elif isinstance(value, list) and value:
            put("[\n")
            for i, item in enumerate(value):
                put(("," + "\n" if i else "") + pad)
                dump(item, level + 1, (*path, i))
            put("\n" + " " * level + "]")
        else:
            put(json.dumps(value, ensure_ascii=False))
        spans[path] = (start, size)

    dump(doc, 0, ())
    return "".join(parts), spans


def json_path_span(doc: Any, content: str, path: str) -> tuple[int, int] | None:
    """Where the value a cited JSON path resolves to sits in the source's printed text."""
    from judge.checks.jsonpath import JsonPathError, parse_json_path

    try:
        keys: list[str | int] = []
        value = doc
        for key, _ in parse_json_path(path):
            if isinstance(value, list):
                index = int(key)
                index = index + len(value) if index < 0 else index
                value, key = value[index], index
            else:
                value = value[key]
            keys.append(key)
    except (JsonPathError, KeyError, IndexError, ValueError, TypeError):
        return None
    text, spans = json_spans(doc)
    return spans.get(tuple(keys)) if text == content else None


def _check_summary(check: dict[str, Any]) -> str:
    detail = check.get("detail") or {}
    parts = [CHECK_TEXT.get(check["name"], check["name"])]
    if detail.get("source"):
        parts.append(f"source {detail['source']}")
    if detail.get("path"):
        parts.append(f"path {detail['path']}")
    if check["name"] == "json_path_resolves" and "value" in detail:
        value = detail["value"]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"value {shown[:200]}")
    if detail.get("missing"):
        parts.append("missing: " + ", ".join(map(str, detail["missing"])))
    if detail.get("matched"):
        parts.append("matched: " + ", ".join(map(str, detail["matched"])))
    if detail.get("reason") and check["outcome"] != "pass":
        parts.append(str(detail["reason"]))
    return " · ".join(parts)


def item_view(
    store: Store, item: dict[str, Any], reveal: bool = False,
    my_review: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything a reviewer needs for one item, as plain data (used by the page and the API)."""
    record: AnswerRecord | None = store.answer_record(item["answer_id"])
    verdict = item_verdict(store, item)
    answer_text = record.answer if record else ""
    if item["kind"] == "answer":
        claim_text = answer_text
        citations: list[dict[str, Any]] = []
    else:
        claim = store.claim_row(item["claim_id"]) if item["claim_id"] else None
        claim_text = claim["text"] if claim else ""
        citations = claim["citations"] if claim else []
    mark = claim_span(answer_text, claim_text) if item["kind"] == "claim" else None
    checks = [
        c for c in (verdict["checks"] if verdict else [])
        if reveal or not str(c.get("target", "")).startswith("evidence")
    ]
    spans_by_source: dict[str, list[dict[str, Any]]] = {}

    def add(source: str | None, start: Any, end: Any, kind: str) -> None:
        if source and isinstance(start, int) and isinstance(end, int) and 0 <= start < end:
            spans_by_source.setdefault(str(source), []).append(
                {"start": start, "end": end, "kind": kind}
            )

    for check in checks:
        d = check.get("detail") or {}
        if check["name"] != "quote_found":
            continue
        judge_side = str(check.get("target", "")).startswith("evidence")
        if check["outcome"] == "pass":
            kind = "evidence" if judge_side else "quote"
            add(d.get("source"), d.get("start"), d.get("end"), kind)
        elif isinstance(d.get("nearest"), dict) and not judge_side:
            add(d.get("source"), d["nearest"].get("start"), d["nearest"].get("end"), "nearest")
    cited = {c.get("source") for c in citations}
    sources = []
    for s in record.sources if record else []:
        content = s.content
        spans = [sp for sp in spans_by_source.get(s.id, []) if sp["end"] <= len(content)]
        for c in citations:
            if c.get("source") == s.id and c.get("path") and s.is_json:
                at = json_path_span(s.json_doc, content, c["path"])
                if at and at[1] > at[0]:
                    spans.append({"start": at[0], "end": at[1], "kind": "jsonpath"})
        if s.id in cited and not spans and claim_text and len(content) <= PASSAGE_MAX_CHARS:
            for start, end, score in best_passages(claim_text, content, k=1):
                if score >= PASSAGE_MIN_SCORE:
                    spans.append({"start": start, "end": end, "kind": "passage"})
        sources.append({
            "id": s.id, "title": s.title, "version": s.version,
            "effective_date": s.effective_date, "is_json": s.is_json, "cited": s.id in cited,
            "text": content, "spans": spans,
            "cited_paths": [
                c["path"] for c in citations if c.get("source") == s.id and c.get("path")
            ],
        })
    sources.sort(key=lambda s: not s["cited"])
    view: dict[str, Any] = {
        "item": {
            "id": item["id"], "queue_id": item["queue_id"], "kind": item["kind"],
            "state": item.get("state"), "reviews_required": item["reviews_required"],
            # the position is the judge's risk order: shown only when the judge is revealed
            **({"position": item["position"]} if reveal else {}),
        },
        "claim": {"id": item["claim_id"], "text": claim_text, "citations": citations},
        "answer_id": item["answer_id"],
        "question": record.question if record else None,
        "answer": {
            "text": answer_text,
            "spans": [{"start": mark[0], "end": mark[1], "kind": "claim"}] if mark else [],
        },
        "sources": sources,
        "checks": [
            {"name": c["name"], "target": c.get("target"), "outcome": c["outcome"],
             "summary": _check_summary(c)}
            for c in checks if c["outcome"] != "skip"
        ],
        "my_review": None if my_review is None else {
            k: my_review[k] for k in ("label", "subtype", "note", "revision", "created_at")
        },
    }
    if reveal:
        view["judge"] = {
            "label": verdict["label"] if verdict else None,
            "subtype": verdict["subtype"] if verdict else None,
            "rationale": verdict["rationale"] if verdict else None,
            "judge_version": item["judge_version"],
            "reasons": item["reasons"], "category": item["category"],
            "stratum": item["stratum"], "weight": item["weight"],
            "evidence": verdict["evidence"] if verdict else [],
            "superseded": verdict["superseded"] if verdict else None,
        }
    return view
