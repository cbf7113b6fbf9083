"""The label vocabulary calibration works with, and input validation.

Calibration is a package of pure functions; it does not import ``judge`` so that it can run
(and be tested) without the model stack. The tuples below must match ``judge.verdicts``;
``tests/test_calibration_stats.py`` checks that they do.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The four claim labels, in report order.
LABELS: tuple[str, ...] = ("supported", "contradicted", "not_in_source", "not_verifiable")

#: Stored in place of a judge label when the judge could not produce one (fail closed).
JUDGE_ERROR = "judge_error"

#: Every value the judge side of a comparison may carry.
JUDGE_LABELS: tuple[str, ...] = (*LABELS, JUDGE_ERROR)

SUPPORTED = "supported"

#: Key used for a missing subtype / stratum / dataset in per-group tables.
UNSPECIFIED = "(unspecified)"


def one_of(value: str, allowed: Sequence[str], field: str) -> str:
    """``value`` if it is in ``allowed``; otherwise ``ValueError`` naming the field and the
    allowed values (used by the pydantic validators of gold items and calibration inputs)."""
    if value not in allowed:
        raise ValueError(f"{field} {value!r} is not one of {', '.join(allowed)}")
    return value


def check_labels(values: Sequence[str], allowed: Sequence[str], what: str) -> None:
    """Raise ``ValueError`` naming the first value (and its position) not in ``allowed``.

    Unknown labels are never dropped or coerced: a typo in a gold file must fail loudly.
    """
    allowed_set = set(allowed)
    for i, value in enumerate(values):
        if value not in allowed_set:
            raise ValueError(
                f"{what}[{i}] = {value!r} is not one of {', '.join(map(repr, allowed))}"
            )


def check_same_length(**sequences: Sequence[object] | None) -> int:
    """Return the common length of the given sequences (``None`` ones are skipped)."""
    lengths = {name: len(seq) for name, seq in sequences.items() if seq is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"sequences differ in length: {detail}")
    return next(iter(lengths.values()), 0)
