"""Human reviews (append-only, revisions keep history) and adjudications."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from judge.store.base import StoreBase


class ReviewsMixin(StoreBase):
    def model_names(self) -> set[str]:
        """Every judge model and answer generator named in the store."""
        names = {row["model"] for row in self.db.query("select model from judge_versions")}
        sql = "select distinct generator from answers where generator is not null"
        names |= {row["generator"] for row in self.db.query(sql)}
        return {n for n in names if n}

    def review_rows(self, subject: str) -> list[dict[str, Any]]:
        """Every review row of a subject, oldest first (revisions included)."""
        return self.rows(
            "select * from reviews where subject = ? order by created_at, annotator, revision",
            [subject],
        )

    def reviews_in_order(self, subjects: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Review rows (of ``subjects``, or all) by subject and revision."""
        sql = "select * from reviews"
        params: list[Any] = []
        wanted = None if subjects is None else list(subjects)
        if wanted is not None and len(wanted) <= 500:
            sql += f" where subject in ({','.join('?' * len(wanted))})"
            params = wanted
        rows = self.rows(sql + " order by subject, revision", params)
        if wanted is not None:
            keep = set(wanted)
            rows = [r for r in rows if r["subject"] in keep]
        return rows

    def latest_review(self, subject: str, annotator: str) -> dict[str, Any] | None:
        return self.one(
            "select * from reviews where subject = ? and annotator = ? "
            "order by revision desc limit 1", [subject, annotator])

    def first_review(self, subject: str, annotator: str) -> dict[str, Any] | None:
        return self.one(
            "select * from reviews where subject = ? and annotator = ? and revision = 1",
            [subject, annotator])

    def insert_review(self, row: dict[str, Any]) -> None:
        """Inside a transaction the caller holds."""
        self.db.table("reviews").insert(row)

    def adjudication_rows(self, subject: str | None = None) -> list[dict[str, Any]]:
        """Adjudications (of one subject, or all) by subject and revision, ``review_ids``
        decoded."""
        sql = "select * from adjudications"
        params: list[Any] = []
        if subject is not None:
            sql += " where subject = ?"
            params.append(subject)
        rows = self.rows(sql + " order by subject, revision", params)
        for row in rows:
            if isinstance(row.get("review_ids"), str):
                row["review_ids"] = json.loads(row["review_ids"])
        return rows

    def insert_adjudication(self, row: dict[str, Any]) -> None:
        with self.transaction():
            self.db.table("adjudications").insert(row)

    # -- reviewer aliases (judge.review.aliases) ---------------------------------------------

    def reviewer_alias_map(self) -> dict[str, str]:
        """Annotator id -> person."""
        if not self.db.table("reviewer_aliases").exists():
            return {}
        return {r["annotator"]: r["person"]
                for r in self.db.query("select annotator, person from reviewer_aliases")}

    def reviewer_alias_rows(self) -> list[dict[str, Any]]:
        return self.rows("select * from reviewer_aliases order by person, annotator")

    def set_reviewer_alias(self, row: dict[str, Any]) -> None:
        """Record an alias and keep the map flat: ids that named ``row['annotator']`` as their
        person now name ``row['person']``."""
        with self.transaction():
            self.db.table("reviewer_aliases").insert(row, replace=True)
            self.db.execute("update reviewer_aliases set person = ? where person = ?",
                            [row["person"], row["annotator"]])

    def remove_reviewer_alias(self, annotator: str) -> bool:
        with self.transaction():
            cursor = self.db.execute("delete from reviewer_aliases where annotator = ?",
                                     [annotator])
        return bool(cursor.rowcount)

    def reviewed_outside_queues(self) -> list[str]:
        """Subjects with a review or an adjudication that no queue holds (oldest first)."""
        return [r["subject"] for r in self.rows(
            "select subject from (select subject, min(created_at) as at from reviews "
            "group by subject union all select subject, min(created_at) from adjudications "
            "group by subject) where subject not in (select subject from queue_items) "
            "group by subject order by min(at)", [])]

    def reviewed_queue_items(self, queue_id: str | None = None) -> list[dict[str, Any]]:
        """Queue items whose subject has a review (of one queue, or all), oldest queue first,
        each with its queue's creation time."""
        sql = (
            "select qi.*, q.created_at as queue_created from queue_items qi "
            "join queues q on q.id = qi.queue_id "
            "where qi.subject in (select subject from reviews)"
        )
        params: list[Any] = []
        if queue_id:
            sql += " and qi.queue_id = ?"
            params.append(queue_id)
        return self.rows(sql + " order by q.created_at, qi.position", params)

    def decided_labels(self) -> dict[str, str]:
        """Subject -> the label people decided (an adjudication, else reviewers who agree;
        people only, ``human:`` annotators)."""
        from judge.store.migrations import HUMAN_DECISIONS

        return {r["subject"]: r["label"] for r in self.db.query(
            HUMAN_DECISIONS + "select subject, label from decisions")}

    def decided_by_domain(self) -> dict[str, int]:
        """Claims people decided, counted by their answer's domain tag ('' without one)."""
        from judge.store.migrations import HUMAN_DECISIONS

        rows = self.db.query(
            HUMAN_DECISIONS + "select coalesce(json_extract(a.record, '$.domain'), '') as domain,"
            " count(*) as n from decisions d join claims c on c.id = d.claim_id "
            "join answers a on a.id = c.answer_id group by 1")
        return {r["domain"]: r["n"] for r in rows}
