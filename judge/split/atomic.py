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

Rule ``atomic/v2`` allows one more shape: a short **leading phrase** of time, place or
manner closed by a comma (``In 2018, …``, ``On 1 September 2009, …``, ``In English, …``,
``According to the manual, …``; ``在英文中，…``, ``截至 2024 年，…``, ``一般來說，…``). The
phrase opens with a preposition or a sentence adverb from a closed list, is at most
:data:`LEAD_WORDS` words (:data:`LEAD_CJK` Chinese characters), joins nothing and refers to
nothing; the comma after it is the sentence's only joining mark, and the rest is atomic by the
rules above. Such a phrase qualifies the one statement that follows it: the split could only
copy it.

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

#: the rules, oldest first (``split_atomic = true`` is the first, kept so the versions that
#: use it replay unchanged)
RULES = ("atomic/v1", "atomic/v2")
#: the newest rule
RULE = RULES[-1]
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
#: atomic/v2: the longest leading phrase, in latin words and in Chinese characters
LEAD_WORDS = 5
LEAD_CJK = 8
_LEAD = re.compile(
    r"^(?P<lead>(?:(?:in|on|at|by|during|throughout|within|across|under|among|as of|"
    r"according to|for example|for instance|in general|in practice|in total|"
    r"on average|by default)\b[^,，]*?|today|currently|originally|historically|typically|"
    r"generally|usually|overall|traditionally|officially|technically|"
    r"(?:在|根據|根据|依據|依据|按照|截至|截止|對於|对于)[^,，]*?|"
    r"一般來說|一般来说|一般而言|通常|目前|平均而言|總的來說|总的来说|整體而言|整体而言))"
    r"\s*[,，]\s*(?P<rest>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
#: a Chinese leading phrase naming something by a clause (``在台北舉辦的…``) is no mere
#: qualifier
_CJK_LEAD_CLAUSE = re.compile(r"的|是|有")
#: a leading phrase that adds, compares or excepts states something of its own
#: (``In addition to compression, …``, ``In contrast to SQLite, …``, ``在價格之外，…``)
_LEAD_STATES = re.compile(
    r"\b(?:addition|additionally|besides|apart|aside|along|together|unlike|like|contrast|"
    r"compared|comparison|similar|similarly|instead|rather|except|other|also|too|"
    r"not|no|never|only)\b|除了|除|之外|以外|不|沒|没|只|也|還|还|像|如同|相比|相較|相较|不同",
    re.IGNORECASE,
)


def atomic_reason(text: str, cites: bool = False, rule: str = RULE) -> str | None:
    """Why the sentence is not atomic under ``rule`` (``None``: it is one claim as it
    stands)."""
    if rule not in RULES:
        raise ValueError(f"unknown atomic rule {rule!r}; known: {', '.join(RULES)}")
    reason = _reason(text, cites)
    if reason is None or rule == "atomic/v1" or not reason.startswith("it joins"):
        return reason
    lead = _LEAD.match(text.strip())
    if lead is None or (why := _lead_reason(lead.group("lead"))) is not None:
        return reason if lead is None else why
    rest = _reason(lead.group("rest"), cites)
    if rest is not None:
        return rest
    return _length_reason(text.strip())


def _lead_reason(lead: str) -> str | None:
    """Why a leading phrase is more than a qualifier (``None``: it qualifies)."""
    cjk = len(_CJK.findall(lead))
    if cjk > LEAD_CJK or len(_WORDS.findall(_CJK.sub(" ", lead))) > LEAD_WORDS:
        return "its leading phrase is long"
    if cjk and (clause := _CJK_LEAD_CLAUSE.search(lead)):
        return f"its leading phrase holds a clause ({clause.group()!r})"
    if word := _LEAD_STATES.search(lead):
        return f"its leading phrase states something of its own ({word.group()!r})"
    if mark := _JOINING_MARKS.search(lead):
        return f"it joins or inserts ({mark.group().strip()!r})"
    if word := _JOINING_WORDS.search(lead) or _CJK_JOINING.search(_CJK_NOT_JOINING.sub(" ", lead)):
        return f"it may join two statements ({word.group()!r})"
    if word := _PRONOUNS.search(lead) or _CJK_PRONOUNS.search(lead):
        return f"it refers to something outside it ({word.group()!r})"
    return None


def _length_reason(plain: str) -> str | None:
    cjk = len(_CJK.findall(plain))
    words = len(_WORDS.findall(_CJK.sub(" ", plain)))
    if cjk > MAX_CJK or words > MAX_WORDS:
        return "it is long"
    return None


def _reason(text: str, cites: bool) -> str | None:
    """The rules of atomic/v1."""
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
    return _length_reason(plain)


def all_atomic(sentences: list[str], cites: list[bool], rule: str = RULE) -> bool:
    """Whether every sentence of an answer is atomic under ``rule`` (so the answer needs no
    split call)."""
    return bool(sentences) and all(
        atomic_reason(text, cited, rule) is None
        for text, cited in zip(sentences, cites, strict=True))
