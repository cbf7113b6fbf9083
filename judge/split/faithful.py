"""Whether the claims a model wrote for a sentence say what the sentence says.

The lexical grounding share (:func:`judge.split.checkable.grounding`) accepts a claim that
keeps most of its sentence's words and swaps the one that matters ("The Seine flows through
Berlin" split as "The Seine flows through Paris"). Two stricter checks on the *anchors* of a
text (its names, quantities and negation) close that:

* :func:`unfaithful`: every anchor of a claim comes from its sentence; a name or quantity may
  come from the question or an earlier sentence only when the sentence has a pronoun or
  demonstrative it could have replaced ("It was founded in 1990" → "Acme was founded in
  1990");
* :func:`uncovered_content`: the claims of a sentence together keep its anchors, and, for
  Chinese (where names cannot be told from other words), every run of two or more content
  characters of the sentence occurs in one of its claims.

Names are latin words that open with a capital (a sentence-opening function word or adverb
such as "However" or "Usually" is not one), compared case-insensitively; quantities are those
of :func:`judge.checks.quantities.extract_quantities` (so ``一千五`` matches ``1500``, a
full-width ``１５００`` matches ``1500``); negation is one class (``not``, ``no``, ``never``,
``n't``, ``不``, ``沒``, ``未``, ``無`` …), so "no X" may become "X does not".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from judge.checks.quantities import EvidenceIndex, extract_quantities, quantity_in_evidence
from judge.text import CJK_CLASS, STOPWORDS, normalize

_WORD = re.compile(rf"(?:(?![{CJK_CLASS}])[^\W\d_])[\w'’.-]*")
#: capitalised words that open a sentence without naming anything
_OPENERS = frozenset({
    "according", "additionally", "after", "again", "all", "although", "another", "any",
    "because", "before", "both", "currently", "despite", "during", "each", "even", "every",
    "finally", "first", "firstly", "following", "for", "furthermore", "generally", "hence",
    "however", "in", "instead", "later", "many", "meanwhile", "moreover", "most", "no", "not",
    "nothing", "now", "often", "on", "only", "other", "overall", "regarding", "second", "several",
    "since", "some", "still", "thus", "today", "too", "typically", "unlike", "usually", "when",
    "while", "whereas", "with", "without", "yes", "yet", "besides",
    "once", "never", "none", "nobody", "notably", "based", "given", "using", "like", "unless",
    "until", "where", "whether", "why", "how", "what", "who", "which", "yesterday", "tomorrow",
    "recently", "previously", "originally", "initially", "eventually", "today's",
})
_NEGATION = re.compile(
    r"\b(?:not(?!\s+only\b)|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n['’]t\b"
    r"|不(?![過过僅仅但論论同斷断久少錯错然])|沒|没|未(?![來来])|無(?![論论])|无(?!论)|非(?!常)"
    r"|別(?![人的])|勿|莫",
    re.IGNORECASE,
)
#: words that stand for something named elsewhere: a claim may replace them by that name
_ANAPHOR = re.compile(
    r"\b(?:it|its|they|them|their|theirs|he|him|his|she|her|hers|this|that|these|those|"
    r"such|former|latter|same|both|there|here|one)\b|它|他|她|其|該|该|此|這|这|那|本|上述|前者|後者|后者",
    re.IGNORECASE,
)
#: CJK characters that carry grammar, not content: left out of a claim, they are no loss
_CJK_FUNCTION = frozenset(
    "的了也是和與与及在而且但並并就都又還还或等被把將将對对於于為为之其以從从到向由這这那個个"
    "些此該该它他她們们我你您有很最更再已曾則则即乃所着著過过地得吧呢嗎吗啊呀嘛麼么會会可能要"
    "均皆亦仍才只")
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A word compared as a name: casefolded, without a possessive or plural ``s``."""
    word = re.sub(r"['’]s$", "", word.rstrip(".'’-")).casefold()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _names(text: str) -> dict[str, str]:
    """The names of a text (:func:`_stem`): latin words opening with a capital, except
    function words, ``I``, and an opening word that is a sentence opener or reads as a
    participle or adverb ("Compared", "Gathering", "Usually"); stem → the word as written."""
    out: dict[str, str] = {}
    for i, m in enumerate(_WORD.finditer(text)):
        word = m.group().rstrip(".'’-")
        if not word or not word[0].isupper() or word in ("I", "I'm", "I've", "I'd", "I'll"):
            continue
        folded = word.casefold()
        if folded in STOPWORDS or folded in _OPENERS:
            continue
        if i == 0 and folded.endswith(("ing", "ed", "ly")):
            continue
        out.setdefault(_stem(word), word)
    return out


def _words(text: str) -> set[str]:
    return {_stem(m.group()) for m in _WORD.finditer(text)}


def _lacking(names: dict[str, str], text: str) -> list[str]:
    words = _words(text)
    return [word for stem, word in sorted(names.items()) if stem not in words]


def negated(text: str) -> bool:
    return _NEGATION.search(text) is not None


def _missing_anchors(text: str, within: str) -> list[str]:
    """The names and quantities of ``text`` (as written) that ``within`` does not hold."""
    missing = _lacking(_names(text), within)
    quantities = extract_quantities(text)
    if quantities:  # the index of ``within`` only when there is a quantity to look for
        index = EvidenceIndex.of(within)
        missing += [q.text for q in quantities if not quantity_in_evidence(q, index)]
    return missing


def unfaithful(claim: str, sentence: str, context: str = "") -> str | None:
    """Why ``claim`` says something its ``sentence`` does not (``None``: it does not): a name
    or quantity not in the sentence (nor in ``context``, the question and the earlier
    sentences, when the sentence has a pronoun or demonstrative the claim may have replaced),
    or a negation the sentence does not have."""
    borrow = bool(context) and _ANAPHOR.search(sentence) is not None
    missing = _missing_anchors(claim, sentence + ("\n" + context if borrow else ""))
    if missing:
        return f"it says {', '.join(missing)}, which the sentence does not"
    if negated(claim) and not negated(sentence):
        return "it negates what the sentence states"
    return None


def _cjk_content_runs(sentence: str, claims: Sequence[str]) -> list[str]:
    """Runs of two or more content characters of the sentence that no claim keeps (a
    character is kept when a claim holds it with a neighbour of the sentence)."""
    norm = normalize(sentence)
    joined = "\n".join(normalize(c) for c in claims)
    out: list[str] = []
    for m in _CJK_RUN.finditer(norm):
        run = m.group()
        kept = [False] * len(run)
        for i in range(len(run) - 1):
            if run[i:i + 2] in joined:
                kept[i] = kept[i + 1] = True
        if len(run) == 1:
            kept[0] = run in joined
        lost = ""
        for ch, keep in zip(run, kept, strict=True):
            if not keep and ch not in _CJK_FUNCTION:
                lost += ch
                continue
            if len(lost) >= 2:
                out.append(lost)
            lost = ""
        if len(lost) >= 2:
            out.append(lost)
    return out


def uncovered_content(sentence: str, claims: Sequence[str]) -> str | None:
    """What of the sentence's checkable content none of its ``claims`` keeps (``None``: they
    keep it all): a name, a quantity, its negation, or (Chinese) a run of content
    characters."""
    missing = _missing_anchors(sentence, "\n".join(claims)) or _cjk_content_runs(sentence,
                                                                                  claims)
    if missing:
        return f"no claim keeps {', '.join(missing)}"
    if negated(sentence) and not any(negated(c) for c in claims):
        return "no claim keeps its negation"
    return None
