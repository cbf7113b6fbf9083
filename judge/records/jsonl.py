"""Reading answer records with numbered errors: from JSONL (a file, a stream or bytes, read
once) or from records built in memory. A bad line never stops the batch: it is reported with
its number and reason, and skipped."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from judge.records.models import MAX_LINE_BYTES, AnswerRecord
from judge.records.strictjson import BOM, JSONLimitError, check_value, loads


@dataclass(frozen=True)
class RejectedLine:
    line: int
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "error": self.error}


@dataclass(frozen=True)
class AcceptedLine:
    line: int
    record: AnswerRecord


def explain(exc: ValidationError, what: str = "record") -> str:
    """A validation error as ``field: reason; field: reason`` (``what`` when the whole
    object is wrong)."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or what
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def validate_record(data: Any, line_no: int) -> AcceptedLine | RejectedLine:
    """One answer record (a dict or an :class:`AnswerRecord`); never raises for bad input."""
    if isinstance(data, AnswerRecord):
        return AcceptedLine(line_no, data)
    if not isinstance(data, dict):
        return RejectedLine(line_no, f"expected a JSON object, got {type(data).__name__}")
    try:
        check_value(data, "record")  # what the JSONL reader checks, for records in memory
        return AcceptedLine(line_no, AnswerRecord.model_validate(data))
    except JSONLimitError as exc:
        return RejectedLine(line_no, str(exc))
    except ValidationError as exc:
        return RejectedLine(line_no, explain(exc) + _peer_hint(data))
    except (ValueError, TypeError, RecursionError) as exc:  # a value no validator foresaw
        return RejectedLine(line_no, f"invalid record: {type(exc).__name__}: {exc}"[:500])


def _peer_hint(data: dict[str, Any]) -> str:
    """What to do with a row of another tool's format (empty for anything else)."""
    from judge.records.sniff import sniff_object

    sniffed = sniff_object(data)
    if sniffed is None or sniffed.fmt == "records":
        return ""
    if sniffed.fmt in ("ragas", "deepeval"):
        return (f" (this is a row of {sniffed.name}: convert the file with `judge import FILE "
                f"--format {sniffed.fmt}` or judge.read_dataset(path, {sniffed.fmt!r}))")
    return (f" (these are {sniffed.name}: import them as reviews with `judge import FILE "
            f"--format {sniffed.fmt}`)")


def parse_line(raw: bytes, line_no: int) -> AcceptedLine | RejectedLine:
    """Parse one JSONL line under the limits of :mod:`judge.records.strictjson` (checked
    before anything else); never raises for bad input."""
    if len(raw) > MAX_LINE_BYTES:
        return RejectedLine(line_no, f"line is {len(raw)} bytes; the limit is {MAX_LINE_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RejectedLine(line_no, f"not valid UTF-8 (byte {exc.start}): {exc.reason}")
    if line_no == 1:  # the file's own mark; one further on is refused (strictjson)
        text = text.removeprefix(BOM)
    try:
        data = loads(text)
    except JSONLimitError as exc:
        hint = (" (JSONL holds one whole JSON record on each line; a JSON array of records "
                "is read too)") if str(exc).startswith("invalid JSON") else ""
        return RejectedLine(line_no, f"{exc}{hint}")
    except (ValueError, RecursionError, MemoryError) as exc:  # never one line for the batch
        return RejectedLine(line_no, f"cannot read the line: {type(exc).__name__}")
    return validate_record(data, line_no)


def split_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) for every non-blank line (a UTF-8 BOM on the first
    line is dropped)."""
    for line_no, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r\n")
        if raw.strip():
            yield line_no, raw.removeprefix(b"\xef\xbb\xbf") if line_no == 1 else raw


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Every non-blank line of a file, numbered."""
    with open(path, "rb") as fh:
        yield from split_lines(fh)


def without_duplicates(
    items: Iterable[AcceptedLine | RejectedLine], what: str = "line"
) -> Iterator[AcceptedLine | RejectedLine]:
    """Reject a record whose answer id an earlier one has (on the later one)."""
    seen: dict[str, int] = {}
    for item in items:
        if isinstance(item, AcceptedLine):
            answer_id = item.record.answer_id
            if answer_id in seen:
                item = RejectedLine(
                    item.line,
                    f"duplicate answer id {answer_id!r} (first seen on {what} {seen[answer_id]})",
                )
            else:
                seen[answer_id] = item.line
        yield item


def read_records(path: Path) -> Iterator[AcceptedLine | RejectedLine]:
    """Read a JSONL batch file. Duplicate answer ids are rejected on their later line."""
    return without_duplicates(parse_line(raw, n) for n, raw in iter_lines(path))


@dataclass(frozen=True)
class ReadBatch:
    """A JSONL batch read once: its lines, and the sha256 of its bytes (the input's identity)."""

    items: list[AcceptedLine | RejectedLine]
    sha256: str


def read_jsonl(source: Path | str | bytes | BinaryIO) -> ReadBatch:
    """Read a JSONL batch from a path, bytes or a binary stream (a pipe works: the input is
    read exactly once). A JSON array of records, or one record over several lines, is read
    too (items numbered from 1)."""
    if isinstance(source, bytes):
        data = source
    elif isinstance(source, (str, Path)):
        data = Path(source).read_bytes()
    else:
        data = source.read()
    items = _json_document(data)
    if items is None:
        lines = data.splitlines(keepends=True)
        items = [parse_line(raw, n) for n, raw in split_lines(lines)]
    return ReadBatch(list(without_duplicates(items)), hashlib.sha256(data).hexdigest())


def _json_document(data: bytes) -> list[AcceptedLine | RejectedLine] | None:
    """The records of a JSON array (numbered from 1), or the one record of a JSON object
    spread over several lines (a record pasted as printed); None: JSON lines."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head not in (b"[", b"{") or (head == b"{" and len(data.strip().splitlines()) < 2):
        return None
    if head == b"{" and isinstance(parse_line(data.strip().splitlines()[0], 1), AcceptedLine):
        return None  # JSONL whose first line is a whole record
    if len(data) > MAX_LINE_BYTES * 16:
        return None
    try:
        value = loads(data.decode("utf-8").removeprefix("\ufeff"))
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None  # not one JSON document: read as JSON lines, each line's error numbered
    if isinstance(value, dict):
        return [validate_record(value, 1)]
    if isinstance(value, list):
        return [validate_record(item, n) for n, item in enumerate(value, start=1)]
    return None
