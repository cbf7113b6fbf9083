"""Claim-level export rows (JSONL / CSV): one line per claim with its verdict."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
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
            "checks": [
                {k: c[k] for k in ("name", "target", "outcome", "detail")} for c in row["checks"]
            ],
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


def csv_cell(value: Any) -> Any:
    """Nested values as JSON text; a cell a spreadsheet would run as a formula
    (=, +, -, @, tab, CR) is prefixed with a quote."""
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        value = "'" + value
    return value


def csv_lines(rows: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> Iterator[str]:
    """A header line, then one CSV line per row (streamed)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    yield buf.getvalue()
    for row in rows:
        buf.seek(0)
        buf.truncate()
        writer.writerow({k: csv_cell(row.get(k)) for k in fields})
        yield buf.getvalue()


def to_csv(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    return csv_lines(rows, EXPORT_FIELDS)
