"""Review queues and their items."""

from __future__ import annotations

import json
import secrets
from typing import Any

from judge.store.base import StoreBase


def _queue(row: dict[str, Any]) -> dict[str, Any]:
    for key in ("run_ids", "judge_versions", "priority", "strata"):
        row[key] = json.loads(row[key]) if row[key] else None
    raw = row.get("operating_points")
    row["operating_points"] = json.loads(raw) if raw else []
    row["ordering"] = row.get("ordering") or "priority"  # the only order before m005
    return row


def _item(row: dict[str, Any]) -> dict[str, Any]:
    row["reasons"] = json.loads(row["reasons"])
    return row


class QueuesMixin(StoreBase):
    def insert_queue(self, queue: dict[str, Any], items: list[dict[str, Any]]) -> None:
        """A queue and all its items, in one transaction."""
        with self.transaction():
            self.db.table("queues").insert(queue)
            self.db.table("queue_items").insert_all(items)

    def queue_rows(self) -> list[dict[str, Any]]:
        return [_queue(r) for r in self.db.query("select * from queues order by created_at")]

    def queue_row(self, queue_id: str | None = None) -> dict[str, Any] | None:
        """A queue by id, or the latest one."""
        if queue_id:
            row = self.one("select * from queues where id = ?", [queue_id])
        else:
            row = self.one("select * from queues order by created_at desc limit 1")
        return _queue(row) if row else None

    def queue_item_rows(self, queue_id: str) -> list[dict[str, Any]]:
        return [_item(r) for r in self.db.query(
            "select * from queue_items where queue_id = ? order by position", [queue_id])]

    def queue_item_row(self, item_id: str) -> dict[str, Any] | None:
        row = self.one("select * from queue_items where id = ?", [item_id])
        return _item(row) if row else None

    def latest_queue_item_of_claim(self, claim_id: str) -> dict[str, Any] | None:
        """The newest queue item of a claim."""
        row = self.one(
            "select * from queue_items where claim_id = ? order by rowid desc limit 1", [claim_id])
        return _item(row) if row else None

    def queue_blind_seed(self, queue_id: str) -> int:
        """The queue's blind seed (:mod:`judge.review.blind`), drawn and recorded the first
        time it is needed for a queue built without one."""
        row = self.one("select blind_seed from queues where id = ?", [queue_id])
        if row is not None and row["blind_seed"] is not None:
            return int(row["blind_seed"])
        with self.transaction():
            self.db.execute("update queues set blind_seed = ? where id = ? and blind_seed is null",
                            [secrets.randbits(62), queue_id])
        row = self.one("select blind_seed from queues where id = ?", [queue_id])
        if row is None:
            raise KeyError(queue_id)
        return int(row["blind_seed"])

    def queue_item_texts(self, queue_id: str) -> dict[str, dict[str, Any]]:
        """Item id -> the claim's text (an answer's, for a refused answer), the judge's label
        and support, for listing a queue."""
        rows = self.db.query(
            "select qi.id, coalesce(c.text, a.answer) as text, v.label, v.support "
            "from queue_items qi left join claims c on c.id = qi.claim_id "
            "left join answers a on a.id = qi.answer_id "
            "left join verdicts v on v.id = qi.verdict_id where qi.queue_id = ?", [queue_id])
        return {r.pop("id"): r for r in rows}
