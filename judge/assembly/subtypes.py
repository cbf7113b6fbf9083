"""Hallucination subtypes derived by the program: ``misattribution`` (the only verified
evidence comes from a source the claim does not cite), and for strategies where the model
gives only a label, the subtype by rules (numbers, absolutes over hedged evidence, opinion)."""

from __future__ import annotations

import re

from judge.checks.claims import evidence_numbers_check
from judge.records import AnswerRecord
from judge.verdicts import Claim, Evidence, Label


def derive_misattribution(
    claim: Claim, label: str, subtype: str | None, evidence: list[Evidence]
) -> tuple[str, str | None, str | None]:
    """A claim the judge found supported only by sources it does not cite is
    ``not_in_source`` + ``misattribution`` with respect to its citation."""
    cited = {c.source for c in claim.citations}
    if label != Label.SUPPORTED or not cited:
        return label, subtype, None
    found = [e for e in evidence if e.found]
    if found and all(e.source_id not in cited for e in found):
        sources = ", ".join(sorted({e.source_id for e in found}))
        return (
            Label.NOT_IN_SOURCE.value,
            "misattribution",
            f"supported by {sources}, but the claim cites {', '.join(sorted(cited))}",
        )
    return label, subtype, None


_ABSOLUTE = re.compile(
    r"\b(always|never|all|every|must|only|none|no one|impossible|guaranteed)\b|"
    r"總是|一定|必須|所有|從不|絕不|永遠|完全|只有|必定",
    re.IGNORECASE,
)
_HEDGED = re.compile(
    r"\b(usually|often|typically|generally|may|might|can|some|recommended|should|most|"
    r"unless|except|if)\b|通常|經常|可能|建議|一般|多數|部分|除非|如果|若",
    re.IGNORECASE,
)


def derive_subtype(
    claim_text: str, label: str, evidence: list[Evidence], record: AnswerRecord
) -> str | None:
    """The hallucination subtype by program rules, for strategies where the model gives
    only a label: numbers/dates/versions missing from the evidence → numeric_or_version_error;
    an absolute claim over hedged evidence → overgeneralization; an opinion → opinion;
    otherwise unsupported_addition."""
    if label == Label.SUPPORTED:
        return None
    if label == Label.NOT_VERIFIABLE:
        return "opinion"
    numbers = evidence_numbers_check(claim_text, evidence, record)
    if numbers.failed:
        return "numeric_or_version_error"
    text = " ".join(e.quote or "" for e in evidence)
    if _ABSOLUTE.search(claim_text) and _HEDGED.search(text):
        return "overgeneralization"
    return "unsupported_addition"
