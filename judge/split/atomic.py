"""Sentences that are one claim as they stand, so that splitting their answer needs no model
call (``split_atomic``).

Splitting is text generation, the slowest step of the embedded judge; yet many answers are a
few short sentences that each state one thing, where the split could only copy them. A
sentence is **atomic** when the program can tell, by deliberately conservative lexical rules,
that the split has nothing to do with it:

* it states something checkable (:func:`judge.split.checkable.checkable_reason`), so it is
  not a greeting, advice or filler that the split would skip, and asks no question;
* it joins nothing: no comma, semicolon, colon, bracket or dash, and no conjunction or
  relative word (``and``, ``or``, ``but``, ``which``, ``because``, ``while``…; ``和``, ``與``,
  ``並``, ``但``, ``或``, ``而``…), so it cannot hold two facts that could be true or false
  separately;
* it needs no context: no pronoun or demonstrative (``it``, ``they``, ``this``, ``that``…;
  ``它``, ``他``, ``這``, ``該``, ``其``…) that the split would replace by what it refers to;
* it is short: at most :data:`MAX_WORDS` words, or :data:`MAX_CJK` Chinese characters.

An answer whose sentences are all atomic becomes one claim per sentence, the sentence as it
stands (origin ``sentence``), with no call; any other answer is split by the model as before,
every sentence of it (its context matters). The rule is versioned (:data:`RULE`): changing it
means a new id, and ``split_atomic`` is part of the judge version. Measured against the human
claim splits of Factcheck-GPT in ``research/atomic_split.py`` (figures in research/README.md,
"Splitting without a call").
"""

from __future__ import annotations

import re

from judge.split.checkable import checkable_reason
from judge.text import CJK_CLASS

#: the rule's id, recorded with the claims it made
RULE = "atomic/v1"
#: the longest atomic sentence: latin words (numbers count as words)
MAX_WORDS = 20
#: ... and Chinese characters
MAX_CJK = 30

_CJK = re.compile(f"[{CJK_CLASS}]")
_WORDS = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")
#: punctuation that joins or inserts: two clauses, a list, an aside
_JOINING_MARKS = re.compile(r"[,;:()\[\]{}—–/，；：、（）【】「」『』《》…]|\s-\s")
_JOINING_WORDS = re.compile(
    r"\b(?:and|or|but|nor|plus|both|either|neither|while|whereas|which|who|whom|whose|"
    r"where|when|whenever|because|since|although|though|unless|if|whether|so|then|however|"
    r"therefore|thus|respectively|as well as|instead|except|after|before|until)\b",
    re.IGNORECASE,
)
_CJK_JOINING = re.compile(
    r"和|與|与|及|並|并|且|而|但|或|以及|還有|还有|因為|因为|所以|如果|雖然|虽然|同時|同时|"
    r"不過|不过|然而|之後|之后|之前|以後|以后|以前|然後|然后|跟|既|又")
#: words holding one of those characters that join nothing (``提及`` mentions, ``並未`` is
#: an emphatic "not"), taken out before looking
_CJK_NOT_JOINING = re.compile(r"提及|涉及|普及|來得及|来得及|並不|并不|並未|并未|並非|并非|而言")
_PRONOUNS = re.compile(
    r"\b(?:he|she|it|its|they|them|their|theirs|him|his|her|hers|this|that|these|those|"
    r"here|former|latter)\b",
    re.IGNORECASE,
)
_CJK_PRONOUNS = re.compile(r"它|牠|他|她|這|这|那|此|其|該|该|上述|前者|後者|后者|彼")
_QUESTION = re.compile(r"[?？]")


def atomic_reason(text: str, cites: bool = False) -> str | None:
    """Why the sentence is not atomic (``None``: it is one claim as it stands)."""
    plain = text.strip()
    if not plain:
        return "it is empty"
    if _QUESTION.search(plain):
        return "it asks a question"
    if checkable_reason(plain, cites) is None:
        return "it states nothing checkable (the split may skip it)"
    if mark := _JOINING_MARKS.search(plain.rstrip(".。!！")):
        return f"it joins or inserts ({mark.group().strip()!r})"
    cjk_text = _CJK_NOT_JOINING.sub(" ", plain)
    if word := _JOINING_WORDS.search(plain) or _CJK_JOINING.search(cjk_text):
        return f"it may join two statements ({word.group()!r})"
    if word := _PRONOUNS.search(plain) or _CJK_PRONOUNS.search(plain):
        return f"it refers to something outside it ({word.group()!r})"
    cjk = len(_CJK.findall(plain))
    words = len(_WORDS.findall(_CJK.sub(" ", plain)))
    if cjk > MAX_CJK or words > MAX_WORDS:
        return "it is long"
    return None


def all_atomic(sentences: list[str], cites: list[bool]) -> bool:
    """Whether every sentence of an answer is atomic (so the answer needs no split call)."""
    return bool(sentences) and all(
        atomic_reason(text, cited) is None for text, cited in zip(sentences, cites, strict=True))
