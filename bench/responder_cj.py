"""Extension of responder.py for judge prompts that send their items as numbered lines
inside data frames (claim-judge's ``split_claims`` / ``verify_claims``).

This is the copy of ``shared/bench/peers/responder_cj.py`` adapted to ``verify_claims`` v2
(see the end of this docstring); everything the peers send still falls through to
``responder.answer`` unchanged. As written for v1:

    <<DATA-<hex> source_id="C1" title="..."      (sources, one frame each)
    ...text...
    DATA-<hex>>>
    <<DATA-<hex>
    Sentence 1: ...      -> a claim list is asked for, keyed by sentence number
    Claim 1 (cites C1): ...  -> a verdict list is asked for, keyed by claim number
    DATA-<hex>>>

The base responder finds no input in such prompts and answers ``{"claims": []}`` (no claims,
so the judge never reaches its verify step). Here, with the same rules as for every other
system:
  - claim lists = the answer's sentences as numbered by the prompt, re-joining a sentence
    that ends in an initial / abbreviation / list number with the next one (the base
    splitter's rule: "William O." + "Douglas." is one claim); each claim carries the number
    of its first sentence; enum fields take their first value ("fact");
  - verdict lists = one positive verdict per numbered item, the item's number in the
    integer field that numbers items, the positive enum value ("supported"); the optional
    ``evidence`` list gets one verbatim quote (the source sentence sharing most words with
    the item, cut to <= 200 characters at a word boundary) and the optional ``rationale``
    the base responder's 6-word reason, because the prompt asks for both (evidence quotes
    and a one-sentence rationale) and a real model gives them; optional-nullable fields
    (``subtype``) are left out.
Everything else falls through to responder.answer unchanged, so the peers get exactly the
answers they got before (checked by run_cj.py: their counts must not move).

``install()`` swaps responder.answer for this one (used by mock_cj.py).

verify_claims v2 puts each source and each claim in its own frame whose header names it
(``<<DATA-<hex> source "C1"`` / ``<<DATA-<hex> claim 3 cites ["C1"]``) and asks for a compact
evidence item ``{"source", "quote"}`` whose quote is 4 to 12 words that the program extends to
the sentence: the verdict list is filled the same way (one ``supported`` per claim), with the
best-matching source sentence cut to its first 12 words as the quote. split_claims v2 puts
each answer sentence in its own frame (``<<DATA-<hex> sentence=3``): the claim list is filled
the same way as for v1's numbered lines.

judge_answer v1 (``one_call``) puts the sources in frames as verify_claims v2 does and the
answer in one frame (``<<DATA-<hex> answer``) whose lines ``[N] ...`` are its sentences: the
claim list is the sentences joined as for a split, each with the positive label, one compact
evidence quote and the reason as for a verdict list; the optional ``text`` is written only for
a joined claim (the prompt asks for it only when the claim is not its whole sentence), and the
optional ``kind`` and ``subtype`` are left out.

verify_claims v3 and judge_answer v2 (issue 50) frame their data as v2 and v1 do, after a
first line naming the frame token (no frame of its own: read as before); judge_answer v2 gives
a sentence that cites as ``[N] cites ["C1"]: ...``, whose prefix is not the sentence's text.
"""
from __future__ import annotations

import json
import re
from typing import Any

import responder

_BASE_ANSWER = responder.answer
_FRAME = re.compile(r"<<(DATA-[0-9a-f]{16})([^\n]*)\n(.*?)\n\1>>", re.S)
_NUMBERED = re.compile(r"^(Sentence|Claim) (\d+)(?: \([^)]*\))?: (.*)$", re.M)
_SOURCE_ID = re.compile(r'source_id="([^"]*)"')
_WORD = re.compile(r"\w+", re.U)
REASON = "The context supports this statement."
MAX_QUOTE = 200
SHORT_QUOTE_WORDS = 12
_CLAIM_HEAD = re.compile(r"^ claim (\d+)\b")
_SENTENCE_HEAD = re.compile(r"^ sentence=(\d+)\b")
_SOURCE_HEAD = re.compile(r'^ source ("(?:[^"\\]|\\.)*")')
_ANSWER_HEAD = re.compile(r"^ answer$")
_ANSWER_LINE = re.compile(r"^\[(\d+)\] (?:cites \[[^\]\n]*\]: )?(.*)$", re.M)


def frames(text: str) -> list[tuple[str, str]]:
    """(header after the frame token, body) of every data frame."""
    return [(m.group(2), m.group(3)) for m in _FRAME.finditer(text)]


def numbered_items(text: str) -> tuple[str | None, list[tuple[int, str]]]:
    """('Sentence'|'Claim', [(number, text)]) from the last frame with numbered lines, or
    from the claim frames (v2: one frame per claim, numbered in its header)."""
    framed = [(int(m.group(1)), body.strip()) for head, body in frames(text)
              for m in [_CLAIM_HEAD.match(head)] if m]
    if framed:
        return "Claim", framed
    sentences = [(int(m.group(1)), body.strip()) for head, body in frames(text)
                 for m in [_SENTENCE_HEAD.match(head)] if m]
    if sentences:  # split_claims v2: one frame per sentence, numbered in its header
        return "Sentence", sentences
    lines = [(int(n), line.strip()) for head, body in frames(text) if _ANSWER_HEAD.match(head)
             for n, line in _ANSWER_LINE.findall(body)]
    if lines:  # judge_answer v1: one frame, a sentence per numbered line
        return "Answer", lines
    for _, body in reversed(frames(text)):
        found = _NUMBERED.findall(body)
        if found:
            return found[0][0], [(int(n), t.strip()) for _, n, t in found]
    return None, []


def join_sentences(items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for number, text in items:
        text = re.sub(r"\s+", " ", text).strip()
        if not text:
            continue
        if out and responder._NO_END.search(out[-1][1]):
            out[-1] = (out[-1][0], f"{out[-1][1]} {text}")
        else:
            out.append((number, text))
    return out


def _raw_sentences(text: str) -> list[str]:
    """Verbatim sentence-like spans of a source (no whitespace normalisation, so every
    span is a substring of the source)."""
    spans = []
    for line in text.splitlines():
        for chunk in re.split(r"(?<=[.!?])\s+", line):
            chunk = chunk.strip()
            if len(_WORD.findall(chunk)) >= 3:
                spans.append(chunk)
    return spans


def _clip(span: str) -> str:
    if len(span) <= MAX_QUOTE:
        return span
    cut = span[:MAX_QUOTE]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def _short(span: str) -> str:
    return " ".join(span.split()[:SHORT_QUOTE_WORDS])


def best_quote(item: str, sources: list[tuple[str, str]]) -> dict[str, str] | None:
    words = {w.lower() for w in _WORD.findall(item)}
    best, best_score = None, -1
    for sid, body in sources:
        for span in _raw_sentences(body):
            score = len(words & {w.lower() for w in _WORD.findall(span)})
            if score > best_score:
                best, best_score = {"source_id": sid, "quote": _clip(span)}, score
    return best


def _object_array(
    schema: dict[str, Any], filler: responder._Filler
) -> tuple[str | None, dict[str, Any]]:
    """The top-level key holding an array of objects, and the item schema."""
    for key, sub in (schema.get("properties") or {}).items():
        sub = filler.resolve(sub)
        if sub.get("type") == "array":
            items = filler.resolve(sub.get("items", {}))
            if items.get("type") == "object" or "properties" in items:
                return key, items
    return None, {}


def _fill_item(item_schema: dict[str, Any], filler: responder._Filler, number: int, text: str,
               kind: str, sources: list[tuple[str, str]], joined: bool = False) -> dict[str, Any]:
    props = item_schema.get("properties", {})
    required = set(item_schema.get("required", props.keys()))
    out: dict[str, Any] = {}
    for key, sub in props.items():
        sub = filler.resolve(sub)
        typ = sub.get("type")
        if key in required:
            if typ == "integer":
                out[key] = number            # the field that numbers the items
            elif "enum" in sub:
                pos = [v for v in sub["enum"] if str(v).lower() in responder._POSITIVE]
                out[key] = pos[0] if pos else sub["enum"][0]
            elif typ == "string":
                named = key.lower() in ("text", "claim", "statement", "sentence")
                out[key] = text if named else REASON
            else:
                out[key] = filler.value(sub, key, text, True)
        elif kind == "Answer" and key == "text" and joined:
            out[key] = text
        elif kind in ("Claim", "Answer") and key == "evidence" and typ == "array":
            quote = best_quote(text, sources)
            fields = filler.resolve(sub.get("items", {})).get("properties", {})
            if quote and "source" in fields and "source_id" not in fields:  # v2, compact
                quote = {"source": quote["source_id"], "quote": _short(quote["quote"])}
            out[key] = [quote] if quote else []
        elif kind in ("Claim", "Answer") and key == "rationale" and typ == "string":
            out[key] = REASON
    return out


def answer(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    messages = body.get("messages", [])
    users = [m for m in messages if m.get("role") == "user"]
    prompt = responder._text_of(users[-1].get("content")) if users else ""
    kind, items = numbered_items(prompt)
    schema, where = responder.find_schema(body)
    if not kind or schema is None:
        return _BASE_ANSWER(body)
    filler = responder._Filler(schema, {})
    key, item_schema = _object_array(schema, filler)
    if key is None:
        return _BASE_ANSWER(body)
    lines = dict(items)
    if kind == "Sentence":
        items = join_sentences(items)
        task = "statements"
        sources: list[tuple[str, str]] = []
    else:
        if kind == "Answer":
            items = join_sentences(items)
        task = "judgements" if kind == "Answer" else "verdicts"
        sources = [(m.group(1), body_) for head, body_ in frames(prompt)
                   for m in [_SOURCE_ID.search(head)] if m]
        sources += [(json.loads(m.group(1)), body_.strip()) for head, body_ in frames(prompt)
                    for m in [_SOURCE_HEAD.match(head)] if m]
    value = {key: [_fill_item(item_schema, filler, n, t, kind, sources,
                              joined=" ".join(lines.get(n, "").split()) != t)
                   for n, t in items]}
    info = {"schema_source": where, "inputs": ["items"], "counts": {key: len(items)},
            "top_keys": [key], "task": task, "items": len(items), "responder": "cj"}
    return json.dumps(value, ensure_ascii=False), info


def install() -> None:
    responder.answer = answer
