"""Claim-level verdict exports: one row per claim with its verdict, as JSONL, as CSV for
spreadsheets (UTF-8 with a byte-order mark, flat columns, no JSON in cells) and as Parquet
(typed columns; needs the ``parquet`` extra).

A check's ``detail.value`` (what a JSON path resolved to) is always text here, so a column
never mixes numbers and strings."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judge.store import Store

EXPORT_FIELDS = (
    "answer_id",
    "claim_id",
    "claim",
    "citations",
    "label",
    "subtype",
    "evidence",
    "rationale",
    "checks",
    "strength",
    "support",
    "review",
    "review_reasons",
    "error",
    "judge_version",
    "rule",
    "run_id",
)

#: Columns of the spreadsheet CSV: lists are joined with "; ", nothing is JSON.
CSV_FIELDS = (
    "answer_id", "claim_id", "claim", "label", "subtype", "support", "strength", "review",
    "review_reasons", "cited_sources", "citation_quotes", "evidence_sources", "evidence_quotes",
    "failed_checks", "rationale", "error", "judge_version", "run_id",
)
BOM = "\ufeff"


def value_text(value: Any) -> str | None:
    """A JSON value as text (strings as they are); None stays None."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def export_check(check: dict[str, Any]) -> dict[str, Any]:
    detail = dict(check.get("detail") or {})
    if "value" in detail:
        detail["value"] = value_text(detail["value"])
    return {"name": check["name"], "target": check.get("target"), "outcome": check["outcome"],
            "detail": detail}


def export_rows(
    store: Store, run_id: str | None = None, judge_version: str | None = None
) -> Iterator[dict[str, Any]]:
    for row in store.verdict_rows(run_id=run_id, judge_version=judge_version):
        yield {
            "answer_id": row["answer_id"],
            "claim_id": row["claim_id"],
            "claim": row["claim"],
            "citations": row["citations"],
            "label": row["label"],
            "subtype": row["subtype"],
            "evidence": row["evidence"],
            "rationale": row["rationale"],
            "checks": [export_check(c) for c in row["checks"]],
            "strength": row["strength"],
            "support": row.get("support"),
            "review": row["review"],
            "review_reasons": row["review_reasons"],
            "error": row["error"],
            "judge_version": row["judge_version"],
            "rule": row.get("rule"),
            "run_id": run_id or row["run_id"],
        }


def to_jsonl(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


# -- CSV ------------------------------------------------------------------------------------------


def flat_text(value: Any) -> Any:
    """A cell without JSON: lists joined with "; ", a citation as ``S1 $.path "quote"``, a
    source as ``[S1] title: text``, other objects as ``key: value`` pairs; numbers, booleans
    and None as they are."""
    if isinstance(value, list):
        return "; ".join(str(flat_text(v)) for v in value if v not in (None, ""))
    if isinstance(value, dict):
        if "source" in value and set(value) <= {"source", "quote", "path"}:
            parts = [value["source"], value.get("path"), value.get("quote")]
            return " ".join(f'"{p}"' if p == value.get("quote") and p else str(p)
                            for p in parts if p)
        if "id" in value and ("text" in value or "json" in value):
            body = value.get("text")
            if body is None:
                body = json.dumps(value.get("json"), ensure_ascii=False)
            title = f" {value['title']}" if value.get("title") else ""
            return f"[{value['id']}]{title}: {body}"
        return ", ".join(f"{k}: {flat_text(v)}" for k, v in value.items())
    return value


def csv_cell(value: Any) -> Any:
    """A cell: nested values flattened (:func:`flat_text`); a cell a spreadsheet would run as
    a formula (=, +, -, @, tab, CR) is prefixed with a quote."""
    value = flat_text(value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        value = "'" + value
    return value


def csv_lines(rows: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> Iterator[str]:
    """A byte-order mark and a header line, then one CSV line per row (streamed): UTF-8
    with a BOM is what spreadsheet programs need to read Chinese text right."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    yield BOM + buf.getvalue()
    for row in rows:
        buf.seek(0)
        buf.truncate()
        writer.writerow({k: csv_cell(row.get(k)) for k in fields})
        yield buf.getvalue()


def flat_row(row: dict[str, Any]) -> dict[str, Any]:
    """An export row in the spreadsheet columns (:data:`CSV_FIELDS`)."""
    return {
        **{k: row[k] for k in ("answer_id", "claim_id", "claim", "label", "subtype",
                               "support", "strength", "rationale", "error", "judge_version",
                               "run_id")},
        "review": "yes" if row["review"] else "no",
        "review_reasons": row["review_reasons"],
        "cited_sources": [c["source"] + (f" {c['path']}" if c.get("path") else "")
                          for c in row["citations"]],
        "citation_quotes": [c.get("quote") for c in row["citations"]],
        "evidence_sources": [e["source_id"] for e in row["evidence"]],
        "evidence_quotes": [e.get("quote") or e.get("path") for e in row["evidence"]],
        "failed_checks": [f"{c['name']} ({c['target']})" for c in row["checks"]
                          if c["outcome"] == "fail"],
    }


def to_csv(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    return csv_lines((flat_row(r) for r in rows), CSV_FIELDS)


# -- Parquet --------------------------------------------------------------------------------------

#: Keys a check's detail may carry (:mod:`judge.checks.claims`) and their Parquet types;
#: anything else goes, as JSON text, into ``other``.
_DETAIL_TEXT = ("source", "path", "quote", "reason", "value", "at", "segment")
_DETAIL_INT = ("start", "end")
_DETAIL_LISTS = ("matched", "missing", "quantities", "known_sources")


def parquet_schema() -> Any:
    import pyarrow as pa

    text, num = pa.string(), pa.float64()
    detail = pa.struct(
        [(k, text) for k in _DETAIL_TEXT] + [(k, pa.int64()) for k in _DETAIL_INT]
        + [(k, pa.list_(text)) for k in _DETAIL_LISTS]
        + [("nearest", pa.struct([("start", pa.int64()), ("end", pa.int64()),
                                  ("score", num)])),
           ("other", text)])
    return pa.schema([
        ("answer_id", text), ("claim_id", text), ("claim", text),
        ("citations", pa.list_(pa.struct([("source", text), ("quote", text), ("path", text)]))),
        ("label", text), ("subtype", text),
        ("evidence", pa.list_(pa.struct([
            ("source_id", text), ("quote", text), ("path", text), ("found", pa.bool_()),
            ("start", pa.int64()), ("end", pa.int64())]))),
        ("rationale", text),
        ("checks", pa.list_(pa.struct([("name", text), ("target", text), ("outcome", text),
                                       ("detail", detail)]))),
        ("strength", num), ("support", num), ("review", pa.bool_()),
        ("review_reasons", pa.list_(text)), ("error", text), ("judge_version", text),
        ("run_id", text),
    ])


def _typed_detail(detail: dict[str, Any]) -> dict[str, Any]:
    known = set(_DETAIL_TEXT + _DETAIL_INT + _DETAIL_LISTS) | {"nearest"}
    out: dict[str, Any] = {k: value_text(detail.get(k)) for k in _DETAIL_TEXT}
    out.update({k: detail.get(k) for k in _DETAIL_INT})
    out.update({k: None if detail.get(k) is None else [str(v) for v in detail[k]]
                for k in _DETAIL_LISTS})
    out["nearest"] = detail.get("nearest")
    rest = {k: v for k, v in detail.items() if k not in known}
    out["other"] = json.dumps(rest, ensure_ascii=False) if rest else None
    return out


def parquet_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **row,
        "citations": [{k: c.get(k) for k in ("source", "quote", "path")}
                      for c in row["citations"]],
        "evidence": [{k: e.get(k) for k in ("source_id", "quote", "path", "found", "start",
                                            "end")} for e in row["evidence"]],
        "checks": [{**c, "detail": _typed_detail(c["detail"])} for c in row["checks"]],
    }


def write_parquet(rows: Iterable[dict[str, Any]], path: Path | str) -> int:
    """Write the rows to a Parquet file with typed columns; returns the number of rows."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # the optional extra
        raise RuntimeError("Parquet export needs pyarrow: pip install 'claim-judge[parquet]'"
                           ) from exc
    table = pa.Table.from_pylist([parquet_row(r) for r in rows], schema=parquet_schema())
    pq.write_table(table, path)
    rows_written: int = table.num_rows
    return rows_written
