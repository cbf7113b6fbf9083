"""How much a claim's wording meets its evidence, measured by the program: the lexical overlap of
the claim with its verified evidence, and opinion-like wording. The label corrections of
:mod:`judge.assembly.signals` and the features of the linear rule (:mod:`judge.decide.linear`)
both read them."""

from __future__ import annotations

import re

from judge.records import AnswerRecord
from judge.split.citations import strip_markers
from judge.text import lexical_overlap
from judge.verdicts import Evidence

#: Opinion-like wording: first/second person, feelings, small talk.
OPINION = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us|you|your|you're|love|like|liked|"
    r"loves|favorite|favourite|think|believe|hope|wish|guess|feel|cool|fun|awesome|"
    r"interesting|great|nice|amazing|wow|yeah|yes|oh|lol|haha|sounds|enjoy|glad|sorry|"
    r"hello|hi)\b|我|你|喜歡|覺得|希望|認為|感覺|好玩|有趣",
    re.IGNORECASE,
)


def evidence_overlap(claim_text: str, evidence: list[Evidence], record: AnswerRecord) -> float:
    """Largest lexical overlap of the claim (markers stripped) with a verified evidence text."""
    claim = strip_markers(claim_text, record.sources)
    found = [e.quote for e in evidence if e.found and e.quote]
    return max((lexical_overlap(claim, quote) for quote in found), default=0.0)
