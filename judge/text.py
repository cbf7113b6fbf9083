"""Text normalisation and matching for the deterministic checks (no model involved).

Everything here works the same for English and for Traditional or Simplified Chinese:

- :func:`normalize_with_map` folds width, punctuation, whitespace and case, and keeps a map
  back to the original characters, so every match is reported in ORIGINAL offsets.
- :func:`find_quote` finds a quote verbatim (after normalisation), with ``...``/``…`` gaps.
- :func:`tokens`, :func:`lexical_overlap` and :func:`best_passages` give a deterministic
  lexical signal (latin words + CJK bigrams) used by the program's evidence strength.
- :func:`split_sentences` splits English and CJK text into sentence spans (the Latin full
  stops are decided by pysbd, which knows abbreviations such as ``U.S.``, ``Oct.``,
  ``p.m.``, ``St.``); :func:`passage_sentences` is the older splitter that the passages
  behind the excerpts and the fitted rule's features (:func:`best_passages`) keep using, so
  the embedded default sees what its rule was fitted on.

Which characters are CJK and which script or language a text is in live in
:mod:`judge.language` (re-exported here: :func:`is_cjk`, :func:`has_cjk`, :func:`script_lang`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

from judge.language import CJK_CLASS as CJK_CLASS
from judge.language import has_cjk as has_cjk
from judge.language import is_cjk as is_cjk
from judge.language import script_lang as script_lang

T = TypeVar("T")

#: Punctuation unified after NFKC (NFKC already folds the full-width ASCII forms such as
#: ``，：；！？（）［］～＂`` to their ASCII counterparts). All quote marks become ``"``.
_PUNCT: dict[str, str] = {
    "。": ".", "｡": ".", "、": ",", "､": ",",
    "「": '"', "」": '"', "『": '"', "』": '"', "“": '"', "”": '"', "„": '"', "‟": '"',
    "‘": '"', "’": '"', "‚": '"', "‛": '"', "'": '"', "〝": '"', "〞": '"', "〟": '"',
    "«": '"', "»": '"', "‹": '"', "›": '"', "﹁": '"', "﹂": '"', "﹃": '"', "﹄": '"',
    "【": "[", "】": "]", "〔": "[", "〕": "]", "〖": "[", "〗": "]", "〘": "[", "〙": "]",
    "《": "<", "》": ">", "〈": "<", "〉": ">",
    "—": "-", "–": "-", "―": "-", "‐": "-", "‑": "-", "‒": "-", "−": "-", "─": "-",
    "〜": "~", "⋯": "...", "︙": "...", "・": "·", "‧": "·", "•": "·",
}

MIN_QUOTE_CHARS = 2


@lru_cache(maxsize=8192)
def _fold(cluster: str) -> str:
    """NFKC + punctuation unification + casefold of one base character with its marks."""
    out = []
    for ch in unicodedata.normalize("NFKC", cluster):
        for mapped in _PUNCT.get(ch, ch):
            if unicodedata.category(mapped) != "Cf":  # zero-width space, BOM, soft hyphen
                out.append(mapped.casefold())
    return "".join(out)


_NON_SPACE = re.compile(r"\S+")


def _normalize_ascii(text: str) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """:func:`_normalize_uncached` of ASCII text, the same result, fast: NFKC and the
    punctuation table change nothing there but ``'`` (to ``"``), casefold is lower(), and a
    whitespace run between two words becomes one space mapped to the run's first character."""
    pieces: list[str] = []
    starts: list[int] = []
    prev_end = -1
    for m in _NON_SPACE.finditer(text):
        start, end = m.span()
        if pieces:
            pieces.append(" ")
            starts.append(prev_end)
        pieces.append(m.group())
        starts.extend(range(start, end))
        prev_end = end
    norm = "".join(pieces).lower().replace("'", '"')
    return norm, tuple(starts), tuple(i + 1 for i in starts)


def _normalize_uncached(text: str) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """Normalised text plus, per normalised char, the original [start, end) it came from."""
    if text.isascii():
        return _normalize_ascii(text)
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pending = -1  # original index of a whitespace run not yet emitted
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        for ch in _fold(text[i:j]):
            if ch.isspace():
                if chars and pending < 0:
                    pending = i
                continue
            if pending >= 0:
                if not (is_cjk(chars[-1]) or is_cjk(ch)):
                    chars.append(" ")
                    starts.append(pending)
                    ends.append(pending + 1)
                pending = -1
            chars.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    return "".join(chars), tuple(starts), tuple(ends)


#: Sources are searched many times (one quote per citation and per evidence): keep a few.
_normalize = lru_cache(maxsize=64)(_normalize_uncached)

#: Claims, quotes and sentences are normalised and tokenised again and again (checks, evidence
#: strength, excerpts, signals): texts up to this long are cached, longer ones never.
CACHED_CHARS = 4000


@lru_cache(maxsize=16384)
def _normalize_short(text: str) -> str:
    return _normalize_uncached(text)[0]


def cached_when_short(maxsize: int) -> Callable[[Callable[[str], list[T]]],
                                               Callable[[str], list[T]]]:
    """Cache a list-valued function of one text for texts up to :data:`CACHED_CHARS`
    characters (at most ``maxsize`` of them), never for longer ones; every caller gets a list
    of its own."""
    def wrap(function: Callable[[str], list[T]]) -> Callable[[str], list[T]]:
        @lru_cache(maxsize=maxsize)
        def cached(text: str) -> tuple[T, ...]:
            return tuple(function(text))

        @wraps(function)
        def call(text: str) -> list[T]:
            return list(cached(text)) if len(text) <= CACHED_CHARS else function(text)

        return call

    return wrap


def normalize_with_map(text: str) -> tuple[str, list[int]]:
    """Normalise ``text`` for matching and map each normalised char to its original index.

    Steps: Unicode NFKC (folds full-width ASCII and digits, ``…`` → ``...``), CJK and
    typographic punctuation unified (``。``→``.``, ``、``→``,``, every quote mark incl.
    ``「」『』“”‘’`` → ``"``, ``【】``→``[]``, ``《》``→``<>``, dashes → ``-``), zero-width
    characters dropped, whitespace runs collapsed to one space and dropped entirely next to a
    CJK character (so ``401 表示`` and ``401表示`` match), leading/trailing space removed,
    casefold. ``result[1][k]`` is the index in ``text`` of the char that produced
    ``result[0][k]``.
    """
    norm, starts, _ = _normalize(text)
    return norm, list(starts)


def normalize(text: str) -> str:
    """Only the normalised text of :func:`normalize_with_map` (cached up to
    :data:`CACHED_CHARS` characters)."""
    if len(text) <= CACHED_CHARS:
        return _normalize_short(text)
    return _normalize_uncached(text)[0]


# -- quotes ---------------------------------------------------------------------------------

_ELLIPSIS = re.compile(r"\.{2,}")
_QUOTE_EDGE = " \"'.,;:!?·<>()[]"


def _quote_fragments(quote: str) -> list[str] | None:
    """The normalised fragments of a quote (split at ellipses); None when too short."""
    fragments = [f.strip(_QUOTE_EDGE) for f in _ELLIPSIS.split(normalize(quote))]
    fragments = [f for f in fragments if f]
    if not fragments or any(len(f) < MIN_QUOTE_CHARS for f in fragments):
        return None
    return fragments


def quote_too_short(quote: str) -> bool:
    """True when a quote has fewer than two characters once normalised and trimmed."""
    return len(normalize(quote).strip(_QUOTE_EDGE)) < MIN_QUOTE_CHARS


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """Original ``[start, end)`` of ``quote`` in ``text`` after normalisation, else None.

    Leading/trailing punctuation, quote marks and ellipses of the quote are ignored. A quote
    written as fragments joined by ``...``/``…``/``⋯`` is found when every fragment occurs, in
    order and without overlap; the span then covers all fragments. Quotes (or fragments)
    shorter than two normalised characters are never found.
    """
    whole = normalize(quote).strip(_QUOTE_EDGE)
    if len(whole) < MIN_QUOTE_CHARS:
        return None
    norm, starts, ends = _normalize(text)
    at = norm.find(whole)
    if at >= 0:
        return starts[at], ends[at + len(whole) - 1]
    fragments = _quote_fragments(quote)
    if fragments is None or len(fragments) < 2:
        return None
    first, pos = -1, 0
    for fragment in fragments:
        at = norm.find(fragment, pos)
        if at < 0:
            return None
        first = at if first < 0 else first
        pos = at + len(fragment)
    return starts[first], ends[pos - 1]


# -- tokens and overlap ------------------------------------------------------------------------

STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "of", "to", "in", "on",
        "at", "by", "for", "with", "from", "as", "into", "onto", "about", "over", "under", "is",
        "are", "was", "were", "be", "been", "being", "am", "it", "its", "this", "that", "these",
        "those", "there", "here", "which", "who", "whom", "whose", "what", "when", "where", "how",
        "why", "do", "does", "did", "done", "has", "have", "had", "having", "can", "could", "will",
        "would", "shall", "should", "may", "might", "must", "also", "such", "very", "just", "i",
        "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "they",
        "them", "their", "one", "ones"
    }
)

_TOKEN = re.compile(
    rf"(?P<cjk>[{CJK_CLASS}]+)|(?P<num>\d+(?:[.,]\d+)*)|(?P<word>(?:(?![{CJK_CLASS}])[^\W\d_])+)"
)


@cached_when_short(16384)
def tokens(text: str) -> list[str]:
    """Lexical tokens: lowercased latin words and numbers, CJK character bigrams (a single
    CJK character on its own is a unigram). English stopwords and one-letter words are dropped;
    ``1,000`` becomes ``1000``. Cached up to :data:`CACHED_CHARS` characters."""
    out: list[str] = []
    for m in _TOKEN.finditer(normalize(text)):
        if m.lastgroup == "cjk":
            run = m.group()
            out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        elif m.lastgroup == "num":
            out.append(m.group().replace(",", ""))
        else:
            word = m.group()
            if len(word) > 1 and word not in STOPWORDS:
                out.append(word)
    return out


def lexical_overlap(claim: str, evidence: str) -> float:
    """Share (0..1) of the claim's distinct tokens that also occur in ``evidence``."""
    wanted = set(tokens(claim))
    if not wanted:
        return 0.0
    return len(wanted & set(tokens(evidence))) / len(wanted)


# -- sentences ---------------------------------------------------------------------------------

_CJK_STOPS = "。！？；｡"
_LATIN_STOPS = ".?!．"
_CLOSERS = "\"'”’」』)）]】》〉"
_ABBREVIATIONS = frozenset({"e.g", "i.e", "vs", "cf", "al", "mr", "mrs", "ms", "dr", "prof", "fig"})
_LIST_MARKER = re.compile(r"\s*(?:\d{1,3}|[a-zA-Z]|[ivx]{1,4})\s*$")


def _latin_stop_ends(text: str, i: int, start: int,
                     starts: frozenset[int] | None = None) -> bool:
    """Whether the ``.?!`` at ``i`` ends a sentence: followed by space, end or CJK, and not
    an abbreviation (``e.g.``) nor a list marker (``1.`` opening the sentence). With
    ``starts`` (sentence starts found by pysbd), a full stop followed by a space ends a
    sentence only where pysbd starts one."""
    j = i + 1
    while j < len(text) and text[j] in _CLOSERS:
        j += 1
    if j < len(text) and not (text[j].isspace() or is_cjk(text[j])):
        return False
    if text[i] in ".．":
        head = text[start:i]
        word = re.search(r"[\w.]*$", head)
        if word and word.group().lower() in _ABBREVIATIONS:
            return False
        if _LIST_MARKER.fullmatch(head):
            return False
        if starts is not None and j < len(text) and text[j].isspace():
            k = j
            while k < len(text) and text[k].isspace():
                k += 1
            return k >= len(text) or k in starts
    return True


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


#: The longest piece of text pysbd is given at once: its time grows about 4x each time its
#: input doubles, so a long text is segmented in pieces of at most this many characters
#: (cut at a line break, else at the last sentence start pysbd found in the piece).
PYSBD_CHUNK = 4000


def _pysbd_starts(text: str) -> frozenset[int]:
    """Offsets where pysbd (English rules) starts a sentence.

    pysbd's own ``char_span=True`` locates each sentence it found by compiling the sentence
    as a regular expression (the escaped sentence, then any whitespace) and scanning the
    text with it: a quarter of its time on a source. :func:`_sentence_starts` finds the same
    offsets with plain string search."""
    from pysbd.processor import Processor

    if not text:
        return frozenset()
    starts: set[int] = set()
    english, n, pos = _pysbd_english(), len(text), 0
    while pos < n:  # pieces of at most PYSBD_CHUNK: pysbd's time grows faster than its input
        end = min(n, pos + PYSBD_CHUNK)
        line = text.rfind("\n", pos + PYSBD_CHUNK // 4, end) if end < n else -1
        if line >= 0:  # a line break ends a sentence anyway: the piece is whole
            end = line + 1
        chunk = text[pos:end]
        # every piece goes to pysbd (it ends sentences at "!" and "?" too); blank: none
        found = (_sentence_starts(chunk, Processor(chunk, english, char_span=True).process())
                 if chunk.strip() else [])
        if end < n and line < 0:
            # cut in the middle of a paragraph: at the last sentence start pysbd found in
            # the piece's second half (the sentence from there on may be cut short, so it is
            # found again, whole, in the next piece); no such start: at the last space
            later = [at for at in found if at >= len(chunk) // 2]
            if later:
                cut = later[-1]
                found = [at for at in found if at < cut] + [cut]
            else:
                space = chunk.rfind(" ", len(chunk) // 2)
                cut = space + 1 if space >= 0 else len(chunk)
            end = pos + cut
        starts.update(pos + at for at in found if pos + at < end or pos + at == n)
        if end < n:
            starts.add(end)  # where the next piece starts (its first sentence)
        pos = end
    return frozenset(starts)


@lru_cache(maxsize=1)
def _pysbd_english() -> Any:
    from pysbd.languages import Language

    return Language.get_language_code("en")


def _sentence_starts(text: str, sentences: list[str]) -> list[int]:
    """Where pysbd's ``sentences_with_char_spans`` places each sentence, found by string
    search: for each sentence in order, the first non-overlapping occurrence (the sentence
    and the whitespace after it) in the whole text that ends past the previous sentence's
    end; a sentence with no such occurrence is dropped, as pysbd drops it."""
    starts: list[int] = []
    prior_end = 0
    for sentence in sentences:
        if not sentence:  # an empty pattern: pysbd's own regular expression decides
            for match in re.finditer(r"\s*", text):
                if match.end() > prior_end:
                    starts.append(match.start())
                    prior_end = match.end()
                    break
            continue
        pos = 0
        while (at := text.find(sentence, pos)) >= 0:
            end = at + len(sentence)
            while end < len(text) and text[end].isspace():
                end += 1
            if end > prior_end:
                starts.append(at)
                prior_end = end
                break
            pos = end  # finditer resumes after a match: no overlapping occurrence
    return starts


#: Answers are split twice: when the run reads the batch (does the answer cite anything,
#: judge.split.uncited) and when its claims are split; pysbd is most of a split's time.
SPLIT_CACHED = 4096


@cached_when_short(SPLIT_CACHED)
def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``[start, end)`` of ``text`` (whitespace trimmed, empty ones dropped).
    Cached for the last :data:`SPLIT_CACHED` texts up to :data:`CACHED_CHARS` characters: a
    batch of up to about that many answers is split once.

    A sentence ends at a newline, after CJK ``。！？；`` and after English ``.?!`` followed by
    whitespace, the end of the text or a CJK character; whether a full stop before a space
    ends one is pysbd's decision, so ``U.S.``, ``Oct. 5``, ``5 p.m. on``, ``St. Louis`` do
    not. Closing quotes and brackets right after the terminator belong to the sentence;
    ``3.2``, ``e.g.`` and list markers such as ``1.`` opening a sentence do not end one.
    A terminator inside a quotation or a full-width parenthesis (``「…」``, ``『…』``,
    ``“…”``, ``（…）``) ends no sentence unless it ends the quotation: ``他說：「今天很好。明天
    再說！」`` is one sentence (a quotation left open on its line ends nothing).
    """
    has_latin_stop = any(ch in ".．" for ch in text)
    return _split(text, _pysbd_starts(text) if has_latin_stop else None)


def passage_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans by the rules alone (no pysbd): what :func:`best_passages` cuts sources
    into. The excerpts the embedded default reads and its fitted rule's features come from
    these passages; changing the cut would change its verdicts, so it stays as fitted."""
    return _split(text, None, quotes=False)


#: Quotation marks and full-width parentheses whose inside is part of the sentence around it.
_QUOTE_PAIRS = {"「": "」", "『": "』", "“": "”", "﹁": "﹂", "﹃": "﹄", "（": "）"}
#: A quotation whose closing mark is further than this from a terminator inside it (or on
#: another line) is taken as left open: the terminator ends the sentence as usual.
MAX_QUOTE_CHARS = 400


def _inside_quote(text: str, open_quotes: list[str], i: int, j: int) -> bool:
    """Whether the terminator at ``i`` (``text[i:j]`` being it and the terminators and
    closing marks right after it) stays inside a quotation: one is still open after
    ``text[i:j]`` and its closing mark follows on the same line. A quotation left open is
    forgotten (``open_quotes`` emptied)."""
    still = list(open_quotes)
    for ch in text[i + 1 : j]:
        if still and ch == still[-1]:
            still.pop()
    if not still:
        return False
    line_end = text.find("\n", j)
    limit = min(len(text) if line_end < 0 else line_end, j + MAX_QUOTE_CHARS)
    if text.find(still[0], j, limit) >= 0:
        return True
    open_quotes.clear()
    return False


def _split(text: str, starts: frozenset[int] | None,
           quotes: bool = True) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    i, n = 0, len(text)
    open_quotes: list[str] = []  # the closing marks expected, innermost last
    while i < n:
        ch = text[i]
        cut = -1
        if quotes and ch in _QUOTE_PAIRS:
            open_quotes.append(_QUOTE_PAIRS[ch])
        elif open_quotes and ch == open_quotes[-1]:
            open_quotes.pop()
        if ch == "\n":
            cut = i
            open_quotes.clear()
        elif ch in _CJK_STOPS or (ch in _LATIN_STOPS and _latin_stop_ends(text, i, start,
                                                                          starts)):
            j = i + 1
            while j < n and (text[j] in _CJK_STOPS + _LATIN_STOPS or text[j] in _CLOSERS):
                j += 1
            if not (open_quotes and _inside_quote(text, open_quotes, i, j)):
                cut = j
                open_quotes.clear()
        if cut >= 0:
            span = _trimmed(text, start, cut)
            if span:
                spans.append(span)
            start = cut + 1 if ch == "\n" else cut
            i = max(start, i + 1)
            continue
        i += 1
    span = _trimmed(text, start, n)
    if span:
        spans.append(span)
    return spans


# -- passages ----------------------------------------------------------------------------------


def _bm25_idf(df: int, n_docs: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@lru_cache(maxsize=64)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """:func:`split_sentences` of a source, cached per source."""
    return tuple(split_sentences(text))


@lru_cache(maxsize=64)
def _sentence_tokens(text: str) -> tuple[tuple[tuple[int, int], ...], list[set[str]]]:
    """Sentence spans of a source and each sentence's token set (cached per source)."""
    spans = tuple(passage_sentences(text))
    return spans, [set(tokens(text[s:e])) for s, e in spans]


def prepare_source(text: str) -> None:
    """Fill the per-source caches (normalised text, sentences, passages and their tokens):
    CPU work that a long source makes long, done once, ahead, off the event loop (see
    :func:`judge.pipeline.prepare`)."""
    normalize_with_map(text)
    sentence_spans(text)
    _sentence_tokens(text)


def best_passages(
    claim: str, text: str, k: int = 3, window: int = 1
) -> list[tuple[int, int, float]]:
    """The ``k`` passages of ``text`` that best cover the claim's tokens, best first.

    Passages are runs of ``window`` consecutive sentences (:func:`passage_sentences`). The score
    is the BM25-idf-weighted share of the claim's distinct tokens present in the passage:
    ``sum(idf(t) for t in claim ∩ passage) / sum(idf(t) for t in claim)`` in [0, 1], with
    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` over the N passages, so rare words count
    more. Passages scoring 0 are left out, chosen passages never overlap, ties go to the
    earlier passage. Returns ``(start, end, score)`` in original offsets.
    """
    wanted = set(tokens(claim))
    spans, sentence_tokens = _sentence_tokens(text)
    if not wanted or not spans or k <= 0:
        return []
    window = max(1, window)
    count = max(1, len(spans) - window + 1)
    passages = []
    for i in range(count):
        last = min(i + window, len(spans)) - 1
        toks = set().union(*sentence_tokens[i : last + 1])
        passages.append((spans[i][0], spans[last][1], toks))
    idf = {t: _bm25_idf(sum(t in p[2] for p in passages), len(passages)) for t in wanted}
    total = sum(idf.values())
    scored = [(s, e, round(sum(idf[t] for t in wanted & toks) / total, 4))
              for s, e, toks in passages]
    scored.sort(key=lambda p: (-p[2], p[0]))
    chosen: list[tuple[int, int, float]] = []
    for s, e, score in scored:
        if score <= 0 or len(chosen) >= k:
            break
        if all(e <= cs or s >= ce for cs, ce, _ in chosen):
            chosen.append((s, e, score))
    return chosen


# -- token estimate ----------------------------------------------------------------------------

#: characters per model token of non-CJK text (cl100k and Qwen tokenizers give 3.5 to 4.5 on
#: English prose)
CHARS_PER_TOKEN = 3.5
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")


def estimate_tokens(text: str) -> int:
    """Model tokens of ``text``, estimated without a tokenizer (the same on every machine, on
    the high side for English): a CJK character or kana counts one, other text one per
    :data:`CHARS_PER_TOKEN` characters, rounded up."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + math.ceil((len(text) - cjk) / CHARS_PER_TOKEN)
