"""Which script and which language a text is written in, decided by counting characters (no
model, the same on every machine): the CJK characters the checks treat as words of their own
(:func:`is_cjk`), the tag of an East Asian script for HTML (:func:`script_lang`) and whether
strategy ``probe`` reads a text as Chinese (:func:`read_language`), which picks the
language offset of a probe head (:mod:`judge.decide.probe_head`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F),
    (0x3040, 0x30FF), (0x3007, 0x3007),
)

#: Character class (for regular expressions) of the CJK characters :func:`is_cjk` accepts.
CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\u3007\U00020000-\U0002fa1f"

def is_cjk(ch: str) -> bool:
    """True for CJK ideographs (incl. 〇) and Japanese kana: scripts written without spaces."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def has_cjk(text: str) -> bool:
    """True when the text contains any CJK ideograph or kana (the Chinese prompt applies)."""
    return any(is_cjk(ch) for ch in text)


#: Common characters written differently in the two Chinese scripts (the same word, in the
#: same order): which of the two a text uses tells Traditional from Simplified.
_HANT = "這們說時會來對後還與國過發點數資據間種實體現開關問題無長從當學應將經產動樣電麼認錯請讓見"
_HANS = "这们说时会来对后还与国过发点数资据间种实体现开关问题无长从当学应将经产动样电么认错请让见"
_KANA = re.compile("[\u3040-\u30ff]")


def script_lang(text: str) -> str | None:
    """The language tag of a text's East Asian script, for an HTML ``lang`` attribute (glyph
    shapes differ between them): ``ja`` with kana, ``zh-Hant`` or ``zh-Hans`` when the
    characters that differ between the Chinese scripts lean one way, ``zh`` when they do
    not; None for text without CJK characters."""
    if not has_cjk(text):
        return None
    if _KANA.search(text):
        return "ja"
    hant = sum(text.count(ch) for ch in _HANT)
    hans = sum(text.count(ch) for ch in _HANS)
    return "zh-Hant" if hant > hans else "zh-Hans" if hans > hant else "zh"




#: Han characters (CJK ideographs and 〇; no kana), for regular expressions.
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3007\U00020000-\U0002fa1f"
#: The units :func:`han_share` counts: one Han character, one kana, one word of letters of
#: any other script (a run of letters; digits, punctuation and spaces are not units).
_UNITS = re.compile(rf"(?P<han>[{HAN_CLASS}])|(?P<kana>[\u3040-\u30ff])"
                    rf"|(?P<word>(?:(?![{CJK_CLASS}])[^\W\d_])+)")
#: The id of the rule :func:`read_language` follows; a probe head with a language offset
#: names it, so a changed rule is a new head file, hence a new judge version.
LANGUAGE_RULE = "han-share-half/v1"


def han_share(text: str) -> float | None:
    """The share of Han characters among the text's units (a Han character, a kana, a word
    of letters of another script each count one, roughly a model token each); None for a
    text without letters."""
    counts = {"han": 0, "kana": 0, "word": 0}
    for m in _UNITS.finditer(text):
        counts[m.lastgroup or "word"] += 1
    total = sum(counts.values())
    return counts["han"] / total if total else None


def read_text(claim: str, quotes: Iterable[str]) -> str:
    """The text whose language is read for a claim: the claim and its evidence quotes (the
    excerpts the probe located), one per line. The probe's offset
    (:func:`judge.decide.probe.probe_text`) and a flag score that holds the strength of a
    language (:func:`judge.review.score.row_text`) both read this text."""
    return "\n".join([claim, *quotes])


def read_language(text: str) -> str | None:
    """``"zh"`` when the text reads as Chinese, else None (a language without an offset of
    its own), by rule :data:`LANGUAGE_RULE`: Han characters make at least half of its units
    (:func:`han_share`). So Traditional and Simplified text alike are Chinese; Chinese with
    English terms (``系統在 CI 中用 pytest 檢查``: 7 Han characters, 2 words) is Chinese;
    English naming a Chinese term (``the notes 候選筆記 list three options``: 4 of 9) is
    not; Japanese, whose kana count against it, is Chinese only when written mostly in
    kanji; a text without letters is not Chinese."""
    share = han_share(text)
    return "zh" if share is not None and share >= 0.5 else None


#: The rules a probe head may name, by id.
LANGUAGE_RULES: dict[str, Callable[[str], str | None]] = {LANGUAGE_RULE: read_language}
