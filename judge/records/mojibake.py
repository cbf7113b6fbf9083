"""Text whose encoding went wrong on the way (mojibake: UTF-8 read as Latin-1 or cp1252, as in
``doesnâ\\x80\\x99t`` for ``doesn't``) repaired when a peer's dataset is imported, with
`ftfy <https://ftfy.readthedocs.io>`_ (the optional ``ftfy`` extra), the original kept.

Only the encoding is repaired (``ftfy.fix_encoding``): quotes, dashes and widths stay as they
were. Each repaired field's original is kept in the record's ``repaired`` map (field path ->
the text as it came), so nothing of the input is lost and a reviewer can see what changed.
Without ftfy nothing is changed.

May import the leaves only.
"""

from __future__ import annotations

from typing import Any


def _fixer() -> Any:
    try:
        import ftfy
    except ImportError:  # the optional extra: text is kept as it came
        return None
    return ftfy.fix_encoding


def repair_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (an answer-record dict) with the mojibake of its question, answer,
    reference and source titles and texts repaired; the originals under ``repaired``."""
    fix = _fixer()
    if fix is None:
        return record
    originals: dict[str, str] = {}

    def fixed(path: str, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        new = fix(text)
        if new != text:
            originals[path] = text
        return new

    out = dict(record)
    for key in ("question", "answer", "reference"):
        if key in out:
            out[key] = fixed(key, out[key])
    out["sources"] = [
        {**s, **{k: fixed(f"sources.{s.get('id')}.{k}", s[k]) for k in ("title", "text")
                 if k in s}}
        for s in out.get("sources", [])]
    if originals:
        out["repaired"] = originals
    return out
