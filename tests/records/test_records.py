from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.records import (
    AcceptedLine,
    AnswerRecord,
    RejectedLine,
    read_jsonl,
    read_records,
    validate_record,
)
from judge.records.models import MAX_LINE_BYTES
from tests.conftest import write_jsonl

GOOD = {"answer": "401 means unauthenticated [S1].", "sources": [{"id": "S1", "text": "x"}]}


def _results(path: Path) -> tuple[list[AcceptedLine], list[RejectedLine]]:
    items = list(read_records(path))
    return (
        [i for i in items if isinstance(i, AcceptedLine)],
        [i for i in items if isinstance(i, RejectedLine)],
    )


def test_bad_lines_are_reported_with_line_numbers_and_the_rest_is_kept(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {**GOOD, "id": "a1"},
            "{not json",
            {"id": "a3", "answer": "   ", "sources": [{"id": "S1", "text": "x"}]},
            {"id": "a4", "answer": "no sources"},
            {**GOOD, "id": "a1"},
            {"id": "a6", "answer": "x", "sources": [{"id": "S1"}]},
            {"id": "a7", "answer": "x", "sources": [{"id": "S1", "text": "a"}, {"id": "S1", "text": "b"}]},
            [1, 2],
            {**GOOD, "id": "a9", "surprise": 1},
            {**GOOD, "id": "a10"},
        ],
    )
    ok, bad = _results(path)
    assert [a.record.id for a in ok] == ["a1", "a10"]
    errors = {r.line: r.error for r in bad}
    assert sorted(errors) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert "invalid JSON" in errors[2]
    assert "answer is empty" in errors[3]
    assert "sources" in errors[4] and "required" in errors[4].lower()
    assert "duplicate answer id 'a1'" in errors[5] and "line 1" in errors[5]
    assert "exactly one of 'text' or 'json'" in errors[6]
    assert "duplicate source id" in errors[7]
    assert "expected a JSON object" in errors[8]
    assert "surprise" in errors[9]


def test_non_utf8_and_huge_lines_are_rejected_alone(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    good = json.dumps({**GOOD, "id": "ok"}).encode()
    huge = json.dumps({**GOOD, "id": "huge", "answer": "x" * (MAX_LINE_BYTES + 10)}).encode()
    path.write_bytes(good + b"\n" + b'{"answer": "\xff\xfe"}\n' + huge + b"\n\n")
    ok, bad = _results(path)
    assert [a.record.id for a in ok] == ["ok"]
    assert bad[0].line == 2 and "UTF-8" in bad[0].error
    assert bad[1].line == 3 and "limit" in bad[1].error


def _marked_lines(line: Any) -> bytes:
    """A file whose first line starts with a BOM (the file's own: fine), then a line starting
    with one (files joined), a mark between tokens, a NUL escaped and raw, a BOM in a text."""
    lines = [b"\xef\xbb\xbf" + line(1), b"\xef\xbb\xbf" + line(2),
             line(3).replace(b", ", b", \xef\xbb\xbf", 1), line(4, "\u0000"),
             line(5).replace(b"x", b"x\x00"), line(6, "\ufeff")]
    return b"\n".join(lines) + b"\n"


def test_nul_and_a_byte_order_mark_in_mid_file_are_line_errors(tmp_path: Path) -> None:
    """#52: never accepted without remark; a BOM inside a text is a character of it."""
    def line(n: int, extra: str = "") -> bytes:
        record = {**GOOD, "id": f"m{n}", "answer": GOOD["answer"] + extra}
        return json.dumps(record, ensure_ascii=False).encode()

    path = tmp_path / "marked.jsonl"
    path.write_bytes(_marked_lines(line))
    ok, bad = _results(path)
    assert [a.record.id for a in ok] == ["m1", "m6"]
    errors = {r.line: r.error for r in bad}
    assert sorted(errors) == [2, 3, 4, 5]
    assert "byte-order mark (U+FEFF) at column 1" in errors[2] and "begin the file" in errors[2]
    assert "byte-order mark (U+FEFF)" in errors[3]
    assert all("NUL character (U+0000)" in errors[n] for n in (4, 5))
    # the same from bytes (a pipe, an HTTP body) and for records given in memory
    assert [getattr(i, "line", 0) for i in read_jsonl(path.read_bytes()).items
            if isinstance(i, RejectedLine)] == [2, 3, 4, 5]
    rejected = validate_record({**GOOD, "answer": "a\x00b"}, 1)
    assert isinstance(rejected, RejectedLine) and "U+0000" in rejected.error


def test_id_defaults_to_content_hash_and_citations_accept_strings() -> None:
    rec = AnswerRecord.model_validate(
        {**GOOD, "claims": [{"text": "c", "citations": ["S1", {"source": "S1", "quote": "x"}]}]}
    )
    again = AnswerRecord.model_validate(
        {**GOOD, "claims": [{"text": "c", "citations": ["S1", {"source": "S1", "quote": "x"}]}]}
    )
    other = AnswerRecord.model_validate({**GOOD, "answer": "different"})
    assert rec.id and rec.id.startswith("a-") and rec.id == again.id != other.id
    assert rec.claims and rec.claims[0].citations[0].source == "S1"
    assert rec.claims[0].citations[1].quote == "x"


def test_json_sources_keep_their_document() -> None:
    rec = AnswerRecord.model_validate(
        {"answer": "hr 61", "sources": [{"id": "s.json", "json": {"metrics": [{"value": 61}]}}]}
    )
    assert rec.sources[0].is_json and '"value": 61' in rec.sources[0].content


def test_a_long_url_is_a_source_id_and_its_citation() -> None:
    from judge.records import AnswerRecord

    url = "https://example.org/" + "a/" * 140  # 300 characters
    record = AnswerRecord.model_validate({
        "id": "u1", "answer": "The page says so.", "sources": [{"id": url, "text": "It says so."}],
        "claims": [{"text": "The page says so.", "citations": [url]}]})
    assert record.sources[0].id == url and len(url) == 300
    with pytest.raises(ValueError, match="2000"):
        AnswerRecord.model_validate({"id": "u2", "answer": "x.",
                                     "sources": [{"id": "h" * 2001, "text": "x."}]})
