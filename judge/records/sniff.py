"""Which format a file is in, from the keys of its first object: answer records, a RAGAS or
DeepEval dataset, Label Studio tasks or Argilla records. ``judge run`` on a peer's file names
the import command instead of rejecting every line, and ``judge import`` with the wrong
``--format`` names the right one.

Cheap and bounded: only the first object (of a JSON array, a JSON object, JSONL or CSV
header) within the first :data:`SNIFF_BYTES` is read.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: how much of a file is read to tell its format
SNIFF_BYTES = 1 << 20

#: format -> keys that name it (any one of them, with no ``sources``)
_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = (
    ("ragas", frozenset({"user_input", "retrieved_contexts", "response", "contexts",
                         "ground_truth"})),
    ("deepeval", frozenset({"actual_output", "retrieval_context", "expected_output", "input"})),
    ("label-studio", frozenset({"annotations", "predictions", "drafts"})),
    ("argilla", frozenset({"responses", "suggestions", "fields"})),
)

#: what each format is, in words
FORMAT_NAMES = {"records": "answer records", "ragas": "a RAGAS dataset",
                "deepeval": "a DeepEval dataset", "label-studio": "Label Studio tasks",
                "argilla": "Argilla records"}


@dataclass(frozen=True)
class Sniffed:
    """The format a file looks like and the keys that gave it away."""

    fmt: str
    keys: tuple[str, ...]

    @property
    def name(self) -> str:
        return FORMAT_NAMES.get(self.fmt, self.fmt)


def sniff_object(obj: Any) -> Sniffed | None:
    """The format one object looks like (None: none known)."""
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if "sources" in keys and "answer" in keys:
        return Sniffed("records", ("answer", "sources"))
    if "data" in keys and keys & {"annotations", "predictions"}:
        return Sniffed("label-studio", tuple(sorted(keys & {"data", "annotations",
                                                              "predictions"})))
    best: Sniffed | None = None
    for fmt, names in _SIGNATURES:
        hits = tuple(sorted(keys & names))
        if fmt == "deepeval" and hits == ("input",):
            continue  # "input" alone says little
        if hits and (best is None or len(hits) > len(best.keys)):
            best = Sniffed(fmt, hits)
    return best


def first_object(path: Path) -> Any:
    """The first object of a JSON array, JSON object, JSONL or CSV file (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES).decode("utf-8-sig", errors="replace")
    except OSError:
        return None
    if path.suffix.lower() == ".csv":
        return next(csv.DictReader(io.StringIO(head)), None)
    text = head.lstrip()
    if text.startswith("["):
        try:
            value, _ = json.JSONDecoder().raw_decode(text[1:].lstrip())
            return value
        except json.JSONDecodeError:
            return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict):
        for key in ("test_cases", "goldens", "samples", "data"):
            inner = value.get(key)
            if isinstance(inner, list) and inner:
                return inner[0]
    return value


def sniff_file(path: Path) -> Sniffed | None:
    """The format ``path`` looks like, from its first object (None: none known)."""
    return sniff_object(first_object(path))


def import_command(sniffed: Sniffed, path: Path | str) -> str:
    """The command that reads a file of this format."""
    if sniffed.fmt in ("ragas", "deepeval"):
        out = Path(path).with_suffix("").name + ".records.jsonl"
        return f"judge import {path} --format {sniffed.fmt} -o {out}"
    if sniffed.fmt == "records":
        return f"judge run {path}"
    return f"judge import {path} --format {sniffed.fmt} --db judge.db"
