"""JSON paths (``$.metrics[0].value``, ``$['a b'][-1]``): parsing and resolving them in a
cited JSON source. Imports nothing from the rest of the package."""

from __future__ import annotations

import json
import re
from typing import Any

# == JSON paths ====================================================================================


class JsonPathError(ValueError):
    """A JSON path that does not resolve; ``at`` is the path prefix where it stopped and
    ``segment`` the segment that failed."""

    def __init__(self, reason: str, at: str, segment: str) -> None:
        super().__init__(reason)
        self.reason, self.at, self.segment = reason, at, segment


_PATH_SEGMENT = re.compile(
    r"""\.(?P<dot>[^.\[\]\s]+)
      | \[\s*(?P<index>-?\d+)\s*\]
      | \[\s*'(?P<sq>(?:[^'\\]|\\.)*)'\s*\]
      | \[\s*"(?P<dq>(?:[^"\\]|\\.)*)"\s*\]""",
    re.VERBOSE,
)


def parse_json_path(path: str) -> list[tuple[str | int, str]]:
    """Segments of a JSONPath subset: ``$``, ``.key``, ``['key']``, ``["key"]``, ``[n]``
    (negative allowed). Keys may be any unicode. The leading ``$`` may be omitted. Returns
    ``(key or index, segment text)`` pairs; raises :class:`JsonPathError` on other syntax
    (wildcards, ``..``, filters, slices)."""
    text = path.strip()
    if text.startswith("$"):
        pos = 1
    else:
        text = text if text.startswith(("[", ".")) else "." + text
        pos = 0
    segments: list[tuple[str | int, str]] = []
    while pos < len(text):
        m = _PATH_SEGMENT.match(text, pos)
        if m is None:
            raise JsonPathError(
                f"unsupported or malformed path syntax at {text[pos:pos + 20]!r}",
                text[:pos] or "$", text[pos:pos + 20],
            )
        if m.group("index") is not None:
            key: str | int = int(m.group("index"))
        elif m.group("dot") is not None:
            key = m.group("dot")
        else:
            key = re.sub(r"\\(.)", r"\1", m.group("sq") if m.group("sq") is not None
                         else m.group("dq"))
        segments.append((key, m.group()))
        pos = m.end()
    return segments


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "null" if value is None else f"a {type(value).__name__}"


def _step(value: Any, key: str | int, at: str, segment: str) -> Any:
    if isinstance(key, str) and isinstance(value, list) and re.fullmatch(r"-?\d+", key):
        key = int(key)  # $.items.0 on an array
    if isinstance(key, int):
        if not isinstance(value, list):
            raise JsonPathError(f"{segment} needs an array but {at} is {_kind(value)}", at, segment)
        if not -len(value) <= key < len(value):
            raise JsonPathError(
                f"index {key} out of range at {at} (length {len(value)})", at, segment
            )
        return value[key]
    if not isinstance(value, dict):
        raise JsonPathError(f"{segment} needs an object but {at} is {_kind(value)}", at, segment)
    if key not in value:
        keys = ", ".join(repr(k) for k in list(value)[:10])
        raise JsonPathError(f"key {key!r} not found at {at} (keys: {keys})", at, segment)
    return value[key]


def walk_json_path(doc: Any, path: str) -> Any:
    value, at = doc, "$"
    for key, segment in parse_json_path(path):
        value = _step(value, key, at, segment)
        at += segment
    return value


def resolve_json_path(doc: Any, path: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``path`` resolves in ``doc``, else ``(False, reason)`` where the
    reason names the failing segment (e.g. ``index 3 out of range at $.metrics (length 1)``).
    A path resolving to JSON ``null`` is ``(True, None)``."""
    try:
        return True, walk_json_path(doc, path)
    except JsonPathError as exc:
        return False, exc.reason


def value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
