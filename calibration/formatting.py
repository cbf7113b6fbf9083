"""Numbers as people read them: percentages, plain numbers, p-values and intervals. The one
place the HTML reports, the CLI and the generated README blocks format figures. Imports
nothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard

#: Shown where a figure is undefined (no claims of that kind, an empty interval).
MISSING = "–"


def defined(x: float | None) -> TypeGuard[float]:
    """A number that can be shown (not None, not NaN, not infinite)."""
    return x is not None and math.isfinite(x)


def pct(x: float | None, digits: int = 0) -> str:
    """``0.4567`` → ``46%`` (``digits`` decimals)."""
    return f"{100 * x:.{digits}f}%" if defined(x) else MISSING


def num(x: float | None, digits: int = 2) -> str:
    return f"{x:.{digits}f}" if defined(x) else MISSING


def pvalue(x: float | None) -> str:
    if not defined(x):
        return MISSING
    return "< 0.0001" if x < 1e-4 else f"{x:.4f}"


def with_ci(estimate: Any, fmt: Callable[[float | None], str] = pct) -> str:
    """``value (low–high)`` of an estimate (an object or dict with ``value``, ``ci_low``,
    ``ci_high``); the value alone when the interval is undefined."""
    get: Callable[[str], Any] = (
        estimate.get if isinstance(estimate, dict) else (lambda k: getattr(estimate, k, None)))
    value = fmt(get("value"))
    low, high = get("ci_low"), get("ci_high")
    if not (defined(low) and defined(high)):
        return value
    return f"{value} ({fmt(low)}–{fmt(high)})"
