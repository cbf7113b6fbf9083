"""Operating points of the review queue (:mod:`judge.review.triage`), as set from gold."""

from __future__ import annotations

import json
from typing import Any

from judge.store.base import StoreBase


def _point(row: dict[str, Any]) -> dict[str, Any]:
    row["report"] = json.loads(row["report"]) if row.get("report") else {}
    row["sufficient"] = bool(row["sufficient"])
    return row


class OperatingPointsMixin(StoreBase):
    def insert_operating_point(self, row: dict[str, Any]) -> None:
        with self.transaction():
            self.db.table("operating_points").insert(
                {**row, "report": json.dumps(row["report"], ensure_ascii=False)},
                replace=True)

    def operating_point_rows(self, judge_version: str | None = None) -> list[dict[str, Any]]:
        """Every stored operating point (of one judge version), newest first."""
        sql = "select * from operating_points"
        params: list[Any] = []
        if judge_version:
            sql += " where judge_version = ?"
            params.append(judge_version)
        return [_point(r) for r in self.db.query(sql + " order by created_at desc, rowid desc",
                                                 params)]

    def latest_operating_point(self, judge_version: str, domain: str, target_recall: float,
                               confidence: float) -> dict[str, Any] | None:
        """The newest point set for this version, domain ('' = version-wide) and target."""
        row = self.one(
            "select * from operating_points where judge_version = ? and domain = ? and "
            "abs(target_recall - ?) < 1e-9 and abs(confidence - ?) < 1e-9 "
            "order by created_at desc, rowid desc limit 1",
            [judge_version, domain, target_recall, confidence])
        return _point(row) if row else None
