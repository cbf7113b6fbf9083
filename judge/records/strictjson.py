"""Strict JSON for untrusted lines: limits checked before anything else, so that no single line
can crash a batch, the store or a report.

- nesting deeper than :data:`MAX_JSON_DEPTH` is refused by a linear scan *before* parsing
  (the parser would recurse, and a document that parses may still break whatever stores,
  hashes or prints it later);
- a number written with more than :data:`MAX_NUMBER_CHARS` characters is refused (Python
  refuses integers of over 4,300 digits with an error of its own; a float such as ``1e999``
  would become infinity);
- ``NaN``, ``Infinity`` and ``-Infinity`` (accepted by Python's parser, not JSON) are refused;
- an object that names a key twice is refused (parsers disagree on which value wins);
- text with an unpaired surrogate (``"\\ud800"``: valid JSON, but not storable as UTF-8) is
  refused;
- a NUL character (U+0000) is refused: it is no text (a binary file, a broken export), and
  tools cut text at it; raw in a line always, written ``\\u0000`` in a value by
  :func:`check_value` (the records' reader; a gold file warns and keeps its item);
- a byte-order mark (U+FEFF) outside a string is refused: a BOM may only begin the file (the
  readers drop that one), so one further on means files joined with their marks. Inside a
  string it is a character of the text (a zero-width no-break space).

:func:`check_value` applies the same limits to values built in memory (records given to the
Python API as dicts). Imports nothing of the package.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: The deepest nesting of arrays and objects a line may have (a record's own structure takes
#: three levels; the rest is for JSON source documents).
MAX_JSON_DEPTH = 100
#: The longest number a line may write (digits, sign, point and exponent).
MAX_NUMBER_CHARS = 100

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.IGNORECASE)
NUL = "\x00"
BOM = "\ufeff"


class JSONLimitError(ValueError):
    """A line that breaks one of the limits above, or is not strict JSON; the message says
    which and where."""


def nesting_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """The nesting depth of a JSON text, counting no further than ``limit + 1`` (strings are
    skipped; linear time, no recursion)."""
    if text.count("[") + text.count("{") <= limit:
        return min(limit, text.count("[") + text.count("{"))
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1
    return deepest


def _number(text: str) -> None:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(
            f"a number is written with {len(text)} characters; the limit is {MAX_NUMBER_CHARS}"
        )


def _parse_int(text: str) -> int:
    _number(text)
    return int(text)


def _parse_float(text: str) -> float:
    _number(text)
    value = float(text)
    if not math.isfinite(value):
        raise JSONLimitError(f"the number {text} is too large to represent")
    return value


def _parse_constant(name: str) -> Any:
    raise JSONLimitError(f"{name} is not valid JSON (numbers must be finite)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JSONLimitError(f"duplicate key {key!r} in one object")
        out[key] = value
    return out


def loads(text: str) -> Any:
    """Parse one JSON text under the limits; raise :class:`JSONLimitError` (a ValueError) with
    a clear reason for anything else than strict, bounded JSON."""
    stray_marks(text)
    depth = nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise JSONLimitError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                           parse_constant=_parse_constant, object_pairs_hook=_pairs)
        if _SURROGATE_ESCAPE.search(text):  # pairs decode to one character; lone ones stay
            check_value(value, "line")
        return value
    except json.JSONDecodeError as exc:
        raise JSONLimitError(f"invalid JSON at column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JSONLimitError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None


def stray_marks(text: str) -> None:
    """Refuse a NUL character anywhere in a JSON text, and a byte-order mark outside its
    strings (:class:`JSONLimitError` with the column and the fix)."""
    nul = text.find(NUL)
    if nul >= 0:
        raise JSONLimitError(f"a NUL character (U+0000) at column {nul + 1}: NUL is not text "
                             "(a binary file, or an export that wrote it); remove it")
    if BOM in text:
        at = _STRINGS.sub(lambda m: " " * len(m.group()), text).find(BOM)
        if at >= 0:
            raise JSONLimitError(
                f"a byte-order mark (U+FEFF) at column {at + 1}: a BOM may only begin the "
                "file (files joined with their marks?); remove it")


def check_value(value: Any, where: str = "value") -> None:
    """Apply the limits to a value built in memory: nesting, finite numbers of bounded size,
    text keys, Unicode text. Iterative (no recursion), raises :class:`JSONLimitError`."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > MAX_JSON_DEPTH:
                raise JSONLimitError(f"{where}: nested more than {MAX_JSON_DEPTH} levels deep")
            if isinstance(item, dict):
                if any(not isinstance(k, str) for k in item):
                    raise JSONLimitError(f"{where}: object keys must be text")
                stack.extend((k, depth) for k in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            lone = _SURROGATE.search(item)
            if lone:
                raise JSONLimitError(f"{where}: text holds an unpaired surrogate "
                                     f"(U+{ord(lone.group()):04X}), which is not Unicode text")
            if NUL in item:
                before = item[:item.index(NUL)][-30:]
                raise JSONLimitError(f"{where}: a text holds a NUL character (U+0000) after "
                                     f"{before!r}; NUL is not text, remove it")
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if item.bit_length() > MAX_NUMBER_CHARS * 3.33:
                raise JSONLimitError(f"{where}: a number is longer than {MAX_NUMBER_CHARS} "
                                     "digits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JSONLimitError(f"{where}: {item} is not a finite number")
        else:
            raise JSONLimitError(f"{where}: {type(item).__name__} is not a JSON value")
