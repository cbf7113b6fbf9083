"""Deterministic signals that may override the judge model's label (a step of the assembly).

A small model says "supported" far too often (the embedded model's lenient rate was 68 % on
the tuning split) and almost never "not_verifiable". Program rules, each recorded in the
verdict's rationale with the model's original label:

1. opinion-like wording (first/second person, feelings, small talk) with little lexical
   overlap with the evidence → ``not_verifiable``;
2. numbers, dates or versions of the claim missing from evidence that otherwise covers the
   claim → ``contradicted`` (subtype ``numeric_or_version_error`` follows);
3. "supported" while the evidence shares too few of the claim's words → ``not_in_source``;
4. "contradicted" while the evidence shares too few of the claim's words → ``not_in_source``:
   evidence can only make a claim false when it is about the same thing (off by default;
   ``contradiction_overlap_min``).

Thresholds live in the judge config (part of the judge version); they were chosen on the
tuning split of the external dev sets only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judge.checks.claims import evidence_numbers_check
from judge.checks.overlap import OPINION, evidence_overlap
from judge.records import AnswerRecord
from judge.verdicts import Evidence, Label

if TYPE_CHECKING:
    from judge.config import JudgeConfig


def apply_signals(
    claim_text: str,
    label: str,
    evidence: list[Evidence],
    record: AnswerRecord,
    config: JudgeConfig,
) -> tuple[str, str | None]:
    """Return (label, note); the note says what the program changed and why."""
    overlap = evidence_overlap(claim_text, evidence, record)
    was = f"the model said {label}"
    if (
        label != Label.NOT_VERIFIABLE
        and OPINION.search(claim_text)
        and overlap < config.opinion_overlap_max
    ):
        return Label.NOT_VERIFIABLE.value, (
            f"{was}; opinion-like wording with evidence overlap {overlap:.2f}"
        )
    if label in (Label.SUPPORTED, Label.NOT_IN_SOURCE) and overlap >= config.numbers_overlap_min:
        numbers = evidence_numbers_check(claim_text, evidence, record)
        if numbers.failed:
            missing = ", ".join(str(m) for m in numbers.detail.get("missing", [])[:3])
            return Label.CONTRADICTED.value, (
                f"{was}; the evidence covers the claim (overlap {overlap:.2f}) but not its "
                f"numbers/dates/versions ({missing})"
            )
    if label == Label.CONTRADICTED and overlap < config.contradiction_overlap_min:
        return Label.NOT_IN_SOURCE.value, (
            f"{was}; the evidence is not about the claim's subject (overlap {overlap:.2f} < "
            f"{config.contradiction_overlap_min}), so it cannot contradict it"
        )
    if label == Label.SUPPORTED and overlap < config.support_overlap_min:
        return Label.NOT_IN_SOURCE.value, (
            f"{was}; the evidence shares too few of the claim's words (overlap {overlap:.2f} < "
            f"{config.support_overlap_min})"
        )
    return label, None
