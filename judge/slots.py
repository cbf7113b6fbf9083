"""The fill-the-blank question (prompt ``fill_slot``, strategy ``scores``).

Asking a small model whether excerpts make a claim false barely separates contradicted claims
from the rest; asking it to *copy* something out of the excerpts is closer to what it does
well. So the program picks one detail of the claim (its first number, date or version, else
its last proper name, else a quoted title), blanks it out, and asks the model which words of
the excerpts fill the blank. The program then compares the answer with the detail it
removed (``compare``): the same detail (``same``), a different one that the excerpts really
contain (``other``: a hint of contradiction), or nothing usable (``unstated``). The three
outcomes are features of the linear rule (``judge.linear.SLOT_FEATURES``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from judge.checks import extract_quantities
from judge.text import normalize, tokens

#: What the blank replaces in the statement shown to the model.
BLANK = "____"
#: Outcomes of the comparison, in the order of ``judge.linear.SLOT_FEATURES``.
OUTCOMES: tuple[str, ...] = ("same", "other", "unstated")

# A run of capitalised words, allowing short connectives inside ("Bank of America").
_NAME = re.compile(
    r"(?<![\w'’])[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|de|del|da|von|van|and|&)\s+)*[A-Z][\w'’.-]*)*"
)
_QUOTED = re.compile(r"「([^」]{1,40})」|《([^》]{1,40})》|『([^』]{1,40})』|“([^”]{2,60})”")
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'd", "i'll", "yes", "no", "yeah", "oh", "well"})
_NONE_ANSWERS = frozenset(
    normalize(word) for word in (
        "none", "not stated", "not mentioned", "unknown", "n/a", "no", "nothing", "null",
        "無", "没有", "沒有", "未提及", "未說明", "不知道",
    )
)


class SlotFill(BaseModel):
    """The model's answer to ``fill_slot``: words copied from the excerpts, or "none"."""

    answer: str = Field(description='words copied from the excerpts, or "none"')


@dataclass(frozen=True)
class Slot:
    """The detail blanked out of a claim: its text, where it was, and the claim without it."""

    text: str
    start: int
    end: int
    statement: str


def find_slot(claim: str) -> Slot | None:
    """The detail of ``claim`` to ask about, or ``None`` when it has none the program can
    pick: the first number, date or version; else the last proper name that does not start
    the claim; else the first quoted title (「」《》『』“”)."""
    for quantity in extract_quantities(claim):
        at = claim.find(quantity.text)
        if at >= 0 and quantity.text.strip():
            return _slot(claim, at, at + len(quantity.text))
    names = [
        m for m in _NAME.finditer(claim)
        if not _starts_sentence(claim, m.start()) and m.group().lower() not in _NOT_NAMES
    ]
    if names:
        m = names[-1]
        return _slot(claim, m.start(), m.end())
    quoted = _QUOTED.search(claim)
    if quoted:
        group = next(i for i in range(1, 5) if quoted.group(i))
        return _slot(claim, quoted.start(group), quoted.end(group))
    return None


def _starts_sentence(text: str, at: int) -> bool:
    """A capital at the start of a sentence says nothing about a name."""
    before = text[:at].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".!?。！？\n"


def _slot(claim: str, start: int, end: int) -> Slot:
    text = claim[start:end].rstrip(".,;:")
    end = start + len(text)
    return Slot(text=text, start=start, end=end, statement=claim[:start] + BLANK + claim[end:])


def compare(slot: Slot, answer: str, excerpts: list[str]) -> str:
    """``same`` when the answer gives the blanked detail, ``other`` when it gives a different
    one that the excerpts contain, ``unstated`` otherwise (no answer, "none", or words the
    excerpts do not contain)."""
    said = normalize(answer).strip(" .,;:\"'「」《》")
    if not said or said in _NONE_ANSWERS or BLANK in answer:
        return "unstated"
    if _same(slot.text, answer):
        return "same"
    haystack = normalize(" ".join(excerpts))
    return "other" if said in haystack else "unstated"


def _same(detail: str, answer: str) -> bool:
    wanted = {q.key for q in extract_quantities(detail)}
    if wanted:
        return bool(wanted & {q.key for q in extract_quantities(answer)})
    a, b = normalize(detail), normalize(answer)
    if a and (a in b or (len(b) >= 2 and b in a)):
        return True
    detail_words, answer_words = set(tokens(detail)), set(tokens(answer))
    return bool(detail_words) and len(detail_words & answer_words) * 2 >= len(detail_words)
