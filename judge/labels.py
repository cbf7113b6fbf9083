"""The label vocabulary: the four claim labels, ``judge_error`` and the hallucination subtypes.

Plain enums and tuples (no pydantic), so the command line can name them in its help without
importing the output models; :mod:`judge.verdicts` re-exports them.
"""

from __future__ import annotations

from enum import StrEnum


class Label(StrEnum):
    """The four claim labels: the source states it, states the opposite, does not contain
    it, or no source could settle it (a value judgement)."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NOT_IN_SOURCE = "not_in_source"
    NOT_VERIFIABLE = "not_verifiable"


#: Stored in place of a label when the judge could not produce one (fail closed).
JUDGE_ERROR = "judge_error"

LABELS: tuple[str, ...] = tuple(label.value for label in Label)


class Subtype(StrEnum):
    """Hallucination subtypes the judge assigns to non-supported claims, plus ``opinion``
    for value judgements (``not_verifiable``)."""

    UNSUPPORTED_ADDITION = "unsupported_addition"
    MISATTRIBUTION = "misattribution"
    NUMERIC_OR_VERSION_ERROR = "numeric_or_version_error"
    SELF_CONTRADICTION = "self_contradiction"
    OVERGENERALIZATION = "overgeneralization"
    DROPPED_CONDITION = "dropped_condition"
    OPINION = "opinion"


#: Subtypes found in human gold sets (external datasets) that the judge itself never assigns.
GOLD_ONLY_SUBTYPES: tuple[str, ...] = ("partial_support", "not_a_claim", "generic", "personal")
ALL_SUBTYPES: tuple[str, ...] = tuple(s.value for s in Subtype) + GOLD_ONLY_SUBTYPES
