"""Citations written inside answer text: markers, inline titles, and the sentences they cover.

Recognised forms (English and Chinese, full- or half-width):

- bracket markers ``[S1]``, ``[1]``, ``[S1, S2]``, ``[S1][S2]``, ``[1-3]``, ``【1】``, ``［S1］``
  and ``[<source id>]``;
- labelled parentheses ``（依據：《筆記標題》）``, ``（來源：《A》、《B》）``, ``(source: Title)``,
  ``(sources: S1; S2)``, ``（见《标题》）``, and a parenthesis holding only ``《title》`` items;
- a bare ``《Title》`` in the prose when it names a source (it stays part of the sentence).

Numeric markers ``[n]`` name the source with id ``n`` when some source has id ``"1"``, and the
n-th source (1-based) otherwise. ``[Sn]`` names the source with that id (case-insensitive) when
some source has an ``S<number>`` id, and the n-th source otherwise. A marker naming no source is
KEPT as a :class:`~judge.records.Citation` with the id as written, so ``citation_exists`` fails
it; nothing is dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, Field

from judge.records import Citation, Source
from judge.text import normalize, split_sentences


class Sentence(BaseModel):
    """One sentence of an answer with the citations that cover it.

    ``text`` is the sentence without citation markers (and without a leading list bullet);
    ``start``/``end`` are its offsets in the answer. ``inherited`` is true when the citations
    came from a later sentence of the same paragraph (a trailing citation covering it).
    """

    text: str
    start: int
    end: int
    citations: list[Citation] = Field(default_factory=list)
    inherited: bool = False


@dataclass(frozen=True)
class Marker:
    """A citation found in text. ``inline`` markers (a bare ``《Title》``) stay in the prose."""

    start: int
    end: int
    citations: tuple[Citation, ...]
    inline: bool = False


_SEP = r"[,，、;；]"
_CLOSE = "]】］〕"
_BRACKET = re.compile(r"[\[【［〔]\s*([^\[\]【】［］〔〕\n]{1,80}?)\s*[\]】］〕]")
_LABELS = (
    r"資料來源|资料来源|依據|依据|根據|根据|來源|来源|出處|出处|參考|参考|參見|参见|引自|引用|見|见|"
    r"according to|sources?|refs?|references?|citations?|cf\.?|see|via"
)
_LABELLED = re.compile(
    rf"[(（\[【［]\s*(?:{_LABELS})\s*(?P<colon>[:：])?\s*"
    r"(?P<body>[^()（）\[\]【】［］\n]{1,300}?)\s*[)）\]】］]",
    re.IGNORECASE,
)
_TITLE = r"《[^《》\n]{1,200}》"
_PAREN_TITLES = re.compile(rf"[(（]\s*({_TITLE}(?:\s*{_SEP}?\s*{_TITLE})*)\s*[)）]")
_BARE_TITLE = re.compile(r"《([^《》\n]{1,200})》")
_QUOTES = "\"'“”‘’「」『』《》〈〉 \t"


def title_key(text: str) -> str:
    """Comparison key for titles and ids: normalised, without spaces, quotes or brackets."""
    return re.sub(r"[\s\"<>\[\]()]", "", normalize(text)).strip(".,:;!?")


class SourceIndex:
    """Resolves what a marker names (id, number, ``S<n>``, title) to source ids. Read only once
    made: :func:`source_index` shares one among the callers with the same sources."""

    def __init__(self, sources: Sequence[tuple[str, str | None]]) -> None:
        """``sources``: each source's (id, title), in order."""
        self.order = [sid for sid, _ in sources]
        self.by_folded = {sid.casefold(): sid for sid, _ in reversed(sources)}
        self.by_id = {sid: sid for sid, _ in sources}
        self.by_title = {title_key(title): sid for sid, title in reversed(sources) if title}
        self.by_key = {title_key(sid): sid for sid, _ in reversed(sources)}
        self.numeric_ids = "1" in self.by_id
        self.s_ids = any(re.fullmatch(r"[Ss]\d+", sid) for sid, _ in sources)

    def _nth(self, n: int) -> str | None:
        return self.order[n - 1] if 1 <= n <= len(self.order) else None

    def marker(self, item: str) -> str | None:
        """The source id a bracket-marker item names; the item itself for an unknown
        ``S<n>``/``<n>``; None when the item is not marker-like at all."""
        if item in self.by_id:
            return item
        if item.casefold() in self.by_folded:
            return self.by_folded[item.casefold()]
        if m := re.fullmatch(r"[Ss](\d{1,4})", item):
            return item if self.s_ids else (self._nth(int(m.group(1))) or item)
        if re.fullmatch(r"\d{1,4}", item):
            return item if self.numeric_ids else (self._nth(int(item)) or item)
        return None

    def named(self, item: str) -> str | None:
        """The source id a written name (id, marker or title) refers to, else None."""
        found = self.marker(item)
        if found is not None and (found in self.by_id):
            return found
        key = title_key(item)
        return self.by_title.get(key) or self.by_key.get(key)


def source_index(sources: Sequence[Source]) -> SourceIndex:
    """The index of ``sources`` (by their ids and titles, all it reads), made once for the
    same ones: an answer's claims, checks and sentences look markers up against the same
    sources many times (up to a few thousand answers' sources are kept)."""
    return _source_index(tuple((s.id, s.title) for s in sources))


@lru_cache(maxsize=4096)
def _source_index(sources: tuple[tuple[str, str | None], ...]) -> SourceIndex:
    return SourceIndex(sources)


def _bracket_items(body: str, index: SourceIndex) -> list[str] | None:
    """Source ids of a bracket marker's body, or None when it is not a marker."""
    whole = index.named(body.strip())
    if whole is not None:
        return [whole]
    ids: list[str] = []
    for item in (p for p in re.split(rf"\s*{_SEP}\s*|\s+", body) if p):
        if m := re.fullmatch(r"([Ss]?)(\d{1,4})\s*[-–~]\s*\1?(\d{1,4})", item):
            lo, hi = int(m.group(2)), int(m.group(3))
            if not 0 < hi - lo < 20:
                return None
            ids.extend(index.marker(f"{m.group(1)}{n}") or "" for n in range(lo, hi + 1))
            continue
        found = index.marker(item)
        if found is None:
            return None
        ids.append(found)
    return ids or None


def _named_items(items: list[str], index: SourceIndex, need_known: bool) -> list[str] | None:
    """Ids for labelled/parenthesised names; unknown names kept as written. None when
    ``need_known`` and no item names a known source."""
    cleaned = [i.strip(_QUOTES) for i in items]
    cleaned = [i for i in cleaned if i]
    resolved = [index.named(i) for i in cleaned]
    if not cleaned or (need_known and not any(resolved)):
        return None
    return [r or i for r, i in zip(resolved, cleaned, strict=True)]


def _citations(ids: list[str]) -> tuple[Citation, ...]:
    seen: list[str] = []
    for source_id in ids:
        if source_id and source_id not in seen:
            seen.append(source_id)
    return tuple(Citation(source=s) for s in seen)


def _labelled_markers(text: str, index: SourceIndex) -> list[Marker]:
    out = []
    for m in _LABELLED.finditer(text):
        body = m.group("body")
        titles = re.findall(r"《([^《》]+)》", body)
        items = titles or re.split(_SEP, body)
        ids = _named_items(items, index, need_known=not m.group("colon"))
        if ids:
            out.append(Marker(m.start(), m.end(), _citations(ids)))
    return out


def _paren_title_markers(text: str, index: SourceIndex, taken: list[Marker]) -> list[Marker]:
    out = []
    for m in _PAREN_TITLES.finditer(text):
        if _overlaps(m.start(), m.end(), taken):
            continue
        ids = _named_items(re.findall(r"《([^《》]+)》", m.group(1)), index, need_known=True)
        if ids:
            out.append(Marker(m.start(), m.end(), _citations(ids)))
    return out


def _bracket_markers(text: str, index: SourceIndex, taken: list[Marker]) -> list[Marker]:
    """``[S1]``-style markers. A bracket glued to a word (``metrics[2]``) is an index, not a
    citation; so is a bracket chained after one (``a[0][1]``)."""
    out: list[Marker] = []
    for m in _BRACKET.finditer(text):
        if _overlaps(m.start(), m.end(), taken):
            continue
        before = text[m.start() - 1] if m.start() else ""
        if before.isascii() and (before.isalnum() or before in "_.$"):
            continue
        if before and before in _CLOSE and not (out and out[-1].end == m.start()):
            continue
        ids = _bracket_items(m.group(1), index)
        if ids:
            out.append(Marker(m.start(), m.end(), _citations(ids)))
    return out


def _bare_title_markers(text: str, index: SourceIndex, taken: list[Marker]) -> list[Marker]:
    out = []
    for m in _BARE_TITLE.finditer(text):
        source_id = index.by_title.get(title_key(m.group(1)))
        if source_id and not _overlaps(m.start(), m.end(), taken):
            out.append(Marker(m.start(), m.end(), (Citation(source=source_id),), inline=True))
    return out


def _overlaps(start: int, end: int, markers: list[Marker]) -> bool:
    return any(start < mk.end and mk.start < end for mk in markers)


def find_markers(text: str, sources: Sequence[Source] = ()) -> list[Marker]:
    """Every citation marker in ``text``, in order of position."""
    index = source_index(sources)
    markers = _labelled_markers(text, index)
    markers += _paren_title_markers(text, index, markers)
    markers += _bracket_markers(text, index, markers)
    markers += _bare_title_markers(text, index, markers)
    return sorted(markers, key=lambda mk: mk.start)


def strip_markers(text: str, sources: Sequence[Source] = ()) -> str:
    """``text`` with every removable citation marker blanked by spaces (offsets unchanged)."""
    return strip_markers_from(text, find_markers(text, sources))


# -- sentences -------------------------------------------------------------------------------

_PARAGRAPH_BREAK = re.compile(
    r"\n[ \t]*\n"  # a blank line, or a new line opening a list item or heading
    r"|\n(?=[ \t]*(?:[-*•·][ \t]|\d{1,3}[.)][ \t]|\d{1,3}、|[（(]\d{1,3}[)）]|#{1,6}[ \t]))"
)
_BULLET = re.compile(
    r"(?:#{1,6}|[-*•·]|\d{1,3}[.)](?=\s)|\d{1,3}、|[（(]\d{1,3}[)）]|[一二三四五六七八九十]{1,3}、)\s*"
)


def _sentence_text(text: str, start: int, end: int, markers: list[Marker]) -> str:
    """The span without its removable markers (and the blanks right before each)."""
    out, pos = [], start
    for mk in markers:
        if mk.inline or mk.end <= start or mk.start >= end:
            continue
        cut = max(mk.start, pos)
        while cut > pos and text[cut - 1] in " \t\u3000":
            cut -= 1
        out.append(text[pos:cut])
        pos = max(pos, mk.end)
    out.append(text[pos:end])
    return "".join(out).strip()


def _owner(
    at: int,
    spans: list[tuple[int, int]],
    starts: list[int],
    paragraph: list[int],
    breaks: list[int],
) -> int | None:
    """Index of the sentence a marker at ``at`` belongs to: the sentence it sits in or trails
    (same paragraph); else the next sentence of its paragraph; else the previous one."""
    here = bisect_right(breaks, at)
    idx = bisect_right(starts, at) - 1
    if idx >= 0 and (spans[idx][1] > at or paragraph[idx] == here):
        return idx
    nxt = idx + 1
    if nxt < len(spans) and paragraph[nxt] == here:
        return nxt
    if idx >= 0:
        return idx
    return nxt if nxt < len(spans) else None


def _strip_bullet(text: str, start: int, end: int) -> int:
    m = _BULLET.match(text, start, end)
    return m.end() if m and m.end() < end else start


def segment_answer(answer: str, sources: list[Source]) -> list[Sentence]:
    """Split an answer into sentences and attach the citations written in it.

    Markers are blanked before splitting, so ``… forbidden. [S2]`` gives its citation to the
    sentence it trails. A sentence with no citation of its own takes the citations of the next
    cited sentence of the same paragraph (a trailing citation covers the consecutive uncited
    sentences before it; paragraphs end at blank lines and list items); such sentences have
    ``inherited=True``. Sentences after the paragraph's last citation stay uncited.
    """
    markers = find_markers(answer, sources)
    masked = strip_markers_from(answer, markers)
    spans = [(_strip_bullet(masked, s, e), e) for s, e in split_sentences(masked)]
    breaks = [m.start() for m in _PARAGRAPH_BREAK.finditer(masked)]
    starts = [s for s, _ in spans]
    paragraph = [bisect_right(breaks, s) for s in starts]
    own: list[list[Citation]] = [[] for _ in spans]
    for mk in markers:
        idx = _owner(mk.start, spans, starts, paragraph, breaks)
        if idx is not None:
            known = {(c.source, c.quote, c.path) for c in own[idx]}
            own[idx] += [c for c in mk.citations if (c.source, c.quote, c.path) not in known]
    sentences = [
        Sentence(text=_sentence_text(answer, s, e, markers), start=s, end=e, citations=own[i])
        for i, (s, e) in enumerate(spans)
    ]
    _inherit(sentences, paragraph)
    return sentences


def strip_markers_from(text: str, markers: list[Marker]) -> str:
    """``text`` with the given removable markers blanked by spaces."""
    chars = list(text)
    for mk in markers:
        if not mk.inline:
            chars[mk.start : mk.end] = " " * (mk.end - mk.start)
    return "".join(chars)


def _inherit(sentences: list[Sentence], paragraph: list[int]) -> None:
    """Seed rule: a citation covers the consecutive uncited sentences before it."""
    pending: list[int] = []
    for i, sentence in enumerate(sentences):
        if pending and paragraph[pending[0]] != paragraph[i]:
            pending = []
        if not sentence.citations:
            pending.append(i)
            continue
        for j in pending:
            sentences[j].citations = [c.model_copy() for c in sentence.citations]
            sentences[j].inherited = True
        pending = []
