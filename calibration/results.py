"""Result value types shared by every calibration module.

Every rate is an :class:`Estimate`: a value with its interval and the number of items it rests
on. Undefined quantities are ``nan`` in Python and ``None`` in any dump, so
``json.dumps(model.model_dump())`` is always valid JSON (``NaN`` is not) and the dump validates
back into the model (``None`` is read back as ``nan``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer


def _none_to_nan(value: Any) -> Any:
    return math.nan if value is None else value


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


#: A float that is ``nan`` when undefined and dumps as ``None`` (JSON ``null``).
#: Infinities are not expected anywhere; they would also dump as ``None``.
Num = Annotated[
    float,
    BeforeValidator(_none_to_nan),
    PlainSerializer(_finite_or_none, return_type=float | None),
]

NAN = math.nan


class ResultModel(BaseModel):
    """Base of all result models: immutable, extra keys ignored on re-validation."""

    model_config = ConfigDict(frozen=True)


class Estimate(ResultModel):
    """A point estimate with a confidence interval and the number of items behind it.

    ``n`` is the count of items in the denominator (unweighted, even for weighted
    estimates). ``value``, ``ci_low`` and ``ci_high`` are ``nan`` when undefined
    (e.g. ``n == 0``), never 0.
    """

    value: Num
    ci_low: Num = NAN
    ci_high: Num = NAN
    n: int = 0


class SignificanceResult(ResultModel):
    """A hypothesis test: statistic, degrees of freedom (if any), p-value and which method
    was used, in words (e.g. ``"exact binomial"`` or ``"chi-square, continuity-corrected"``)."""

    statistic: Num
    p_value: Num
    df: int | None = None
    method: str
    note: str | None = None


def nan_estimate(n: int = 0) -> Estimate:
    """An undefined estimate over ``n`` items."""
    return Estimate(value=NAN, ci_low=NAN, ci_high=NAN, n=n)
