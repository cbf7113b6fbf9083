"""Abstention statements ("the sources do not say …", 候選筆記未提及 …): recognising them and
what they say the sources are silent about. Whether the sources really are silent is decided
by :mod:`judge.assembly.abstention`."""

from __future__ import annotations

import re

ABSTENTION = re.compile(
    r"(未提及|沒有提及|没有提及|未涵蓋|沒有涵蓋|無法確認|无法确认|未說明|沒有說明|資料不足|"
    r"not (mentioned|covered|stated|specified|addressed)|do(es)? not (say|mention|cover|state|"
    r"specify)|insufficient (information|evidence)|no information (about|on))",
    re.IGNORECASE,
)

#: Words that name the sources rather than the topic ("the notes do not say whether …").
_SOURCE_WORDS = re.compile(
    r"\b(the\s+)?(sources?|notes?|documents?|documentation|context|passages?|excerpts?|"
    r"information|whether|if|any|anything)\b|候選筆記|筆記|來源|文件|摘錄|任何|是否",
    re.IGNORECASE,
)


def looks_like_abstention(text: str) -> bool:
    return bool(ABSTENTION.search(text))


def abstention_topic(text: str) -> str:
    """What the statement says the sources are silent about."""
    return " ".join(_SOURCE_WORDS.sub(" ", ABSTENTION.sub(" ", text)).split())
