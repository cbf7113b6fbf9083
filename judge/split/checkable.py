"""Program checks of a split: whether a sentence the model skipped states something checkable,
and whether a claim is grounded in the words of the sentence it says it comes from.

Both are deliberately simple, lexical and explainable (each returns why), and tuned on the
gold answers (figures in ``docs/split-checks.md``):

* :func:`checkable_reason`: a sentence is checkable when it holds a number, cites a source,
  names something (a capitalised word inside the sentence, a quoted or CJK-bracketed title),
  or makes a declarative statement (a copula or a factual verb with a subject that is not the
  writer or the reader); imperatives, thanks, greetings and first- or second-person asides
  are not. A model may skip a sentence as advice, filler or a greeting only when it is not
  checkable; otherwise the sentence becomes an ``uncovered`` claim, judged and flagged.
* :func:`grounding`: the share of a claim's content words (latin words, numbers, CJK
  character bigrams: :func:`judge.text.tokens`) that occur in its sentence. A claim below
  :data:`GROUNDED_SHARE` (and below :data:`CONTEXT_SHARE` with the rest of the answer as
  context) is not the sentence's claim: a ``judge_error`` for review.
"""

from __future__ import annotations

import re

from judge.text import CJK_CLASS, normalize, tokens

#: A claim is grounded when at least this share of its content words occur in its sentence.
GROUNDED_SHARE = 0.3
#: ... or at least ``GROUNDED_CONTEXT_FLOOR`` in its sentence and this share in the whole answer
#: (a decontextualised claim names what an earlier sentence named: "He" → "Obama").
CONTEXT_SHARE = 0.6
GROUNDED_CONTEXT_FLOOR = 0.15

_DIGIT = re.compile(r"\d")
_CJK = re.compile(f"[{CJK_CLASS}]")
_TITLE = re.compile(r"《[^》]+》|「[^」]+」|“[^”]{3,}”")
#: words that open an imperative, a courtesy or an aside (not a statement of fact)
_NOT_A_STATEMENT = re.compile(
    r"^\W*(?:please|try|consider|make sure|remember|don'?t|do not|feel free|let'?s|let me|"
    r"be sure|always|never|avoid|use|check|ask|keep|note that|thanks?|thank you|hope|enjoy|"
    r"good luck|hello|hi|hey|sure|ok(?:ay)?|yes|no|yeah|well|lol|wow|sorry|"
    r"you (?:should|can|could|may|might|must|will|need|want)|i (?:recommend|suggest|think|"
    r"believe|hope|guess|would|'d|like|love|am|'m|have|'ve|know|wonder|feel)|"
    r"(?:it is|it's) (?:a good idea|important|recommended|best|advisable|worth|wise|helpful)|"
    r"if you)\b",
    re.IGNORECASE,
)
_FIRST_SECOND = frozenset({"i", "you", "we", "me", "my", "your", "our", "us", "i'm", "you're",
                           "we're", "i've", "you've", "let's"})
_DECLARATIVE = re.compile(
    r"\b(?:is|are|was|were|has|had|(?:it|that|there|he|she)'s|they're|have been|has been|"
    r"will be|became|becomes|contains?|"
    r"includes?|supports?|requires?|consists?|"
    r"\w+ed (?:in|on|by|at|from|to|as|with)|born|died|founded|released|introduced|located|"
    r"invented|published|announced|won|owns?|owned|produces?|produced|"
    r"can|cannot|can't|must|should|will|would|may|might|could|does|did|do|"
    r"[a-z]{3,}(?<![su]s)(?<!ss)(?<!ous)(?<!is)e?s)\b",
    re.IGNORECASE,
)
_CJK_DECLARATIVE = re.compile(
    r"是|有|為|为|於|于|位於|成立|發布|发布|發佈|推出|包含|支援|支持|需要|提供|增加|減少|减少|"
    r"導致|导致|採用|采用|屬於|属于|約|约|會|会|能|必須|必须|將|将|已|曾|可|"
    # negated and adjectival predicates: 資料無法說明…, 並未…, 模型很重要, 比…快
    r"無法|无法|不|沒|没|未|很|非常|比|較|较|最")
_CJK_NOT_A_STATEMENT = re.compile(
    r"^\W*(?:建議|建议|請|请|可以考慮|可以考虑|不妨|記得|记得|務必|务必|希望|謝謝|谢谢|祝|"
    r"您好|你好|歡迎|欢迎|如果您|如果你|我認為|我认为|我覺得|我觉得|"
    r"不客氣|不客气|不用謝|不用谢|沒問題|没问题|沒關係|没关系|很高興|很高兴|很抱歉|抱歉|"
    r"對不起|对不起|不好意思)")
#: a latin word with a capital inside Chinese text names something (``Python``, ``SQLite``)
_LATIN_NAME = re.compile(r"(?<![A-Za-z])(?!OK\b|Hi\b)[A-Za-z]*[A-Z][A-Za-z]*")
#: lowercase words after which a capital is a sentence start, not a name
_SENTENCE_OPENERS = re.compile(r"[.!?:;\"'“(\[—–-]\s*$")


def _named_entity(text: str) -> str | None:
    words = list(re.finditer(r"[^\W\d_][\w'’.-]*", text))
    for i, m in enumerate(words):
        word = m.group()
        if i == 0 or word in ("I", "I'm", "I've", "I'd", "I'll", "OK"):
            continue
        if not word[0].isupper():
            continue
        if _SENTENCE_OPENERS.search(text[: m.start()]):
            continue
        return word
    return None


def checkable_reason(text: str, cites: bool = False) -> str | None:
    """Why a sentence states something checkable (``None``: it does not, as far as the program
    can tell): it cites a source, holds a number, names something, or makes a statement."""
    plain = text.strip()
    if cites:
        return "it cites a source"
    if _DIGIT.search(plain):
        return "it holds a number"
    if _TITLE.search(plain):
        return "it names a title"
    if _CJK.search(plain):
        if _CJK_NOT_A_STATEMENT.search(plain):
            return None
        if _CJK_DECLARATIVE.search(plain):
            return "it makes a statement"
        latin = _LATIN_NAME.search(plain)  # mixed text: 「Python 很流行」 names Python
        return f"it names {latin.group()!r}" if latin else None
    name = _named_entity(plain)
    if name is not None:
        return f"it names {name!r}"
    # any clause that is a statement: "yeah, it is also known as gridiron football"
    statements = re.sub(r"[^.!?]*\?", " ", plain)  # questions ask, they do not state
    for clause in re.split(r"[,;:!]|\s[-–—]\s|\.\s", statements):
        if _NOT_A_STATEMENT.search(clause):
            continue
        words = re.findall(r"[\w'’]+", clause.casefold())
        if len(words) < 4 or words[0] in _FIRST_SECOND:
            continue
        if _DECLARATIVE.search(clause):
            return "it makes a statement"
    return None


def grounding(claim: str, sentence: str, answer: str = "") -> float:
    """The share (0..1) of the claim's content words that occur in its sentence; when the
    share in the sentence is at least :data:`GROUNDED_CONTEXT_FLOOR` and the share in the
    whole ``answer`` at least :data:`CONTEXT_SHARE`, the latter counts. A claim without a
    content word is grounded exactly when it occurs in the sentence (after normalisation)."""
    wanted = set(tokens(claim))
    if not wanted:
        return 1.0 if normalize(claim).strip(" .。!?") in normalize(sentence) else 0.0
    share = len(wanted & set(tokens(sentence))) / len(wanted)
    if answer and share >= GROUNDED_CONTEXT_FLOOR:
        in_answer = len(wanted & set(tokens(answer))) / len(wanted)
        if in_answer >= CONTEXT_SHARE:
            return max(share, GROUNDED_SHARE)
    return share


def grounded(claim: str, sentence: str, answer: str = "") -> bool:
    return grounding(claim, sentence, answer) >= GROUNDED_SHARE
