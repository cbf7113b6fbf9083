"""The SQLite store (sqlite-utils): runs, answers, sources, claims, verdicts, checks and
every model call. WAL mode, short transactions, a busy timeout, so that a batch in the
CLI and a reviewer on the web can write at the same time."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from judge.fingerprint import code_fingerprint
from judge.records import AnswerRecord, content_hash
from judge.store.migrations import apply_migrations, write_transaction
from judge.verdicts import Claim, Verdict

BUSY_TIMEOUT_MS = 30_000


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def verdict_id(judge_version: str, claim_id: str) -> str:
    return "v-" + content_hash([judge_version, claim_id])[:20]


class StoreError(RuntimeError):
    pass


class Store:
    """One SQLite file. Open with ``Store.open(path)``; migrations are applied on open."""

    def __init__(self, db: sqlite_utils.Database, path: Path | None = None) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, path: Path | str) -> Store:
        path = Path(path)
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        db = sqlite_utils.Database(conn)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.enable_wal()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = OFF")
        apply_migrations(db)
        return cls(db, path)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``: takes the write lock up front (waiting up to the
        busy timeout), so concurrent writers queue instead of failing on a lock upgrade.
        Nested use becomes a savepoint (sqlite-utils' own writes nest the same way)."""
        with write_transaction(self.db):
            yield

    def close(self) -> None:
        self.db.conn.close()

    # -- judge versions and runs -------------------------------------------------

    def ensure_judge_version(
        self, version: str, model: str, config: dict[str, Any], templates: dict[str, str]
    ) -> None:
        with self.transaction():
            self.db["judge_versions"].insert(
                {
                    "id": version,
                    "model": model,
                    "config": _dumps(config),
                    "templates": _dumps(templates),
                    "created_at": now(),
                },
                ignore=True,
            )

    def judge_versions(self) -> list[dict[str, Any]]:
        return list(self.db.query("select * from judge_versions order by created_at"))

    def start_run(
        self, judge_version: str, input_path: str, input_sha256: str, purpose: str = "run"
    ) -> tuple[str, bool]:
        """Resume the unfinished run of the same input and judge version, else start one.
        Returns (run_id, resumed)."""
        row = next(
            self.db.query(
                "select id from runs where judge_version = ? and input_sha256 = ? "
                "and status = 'running' order by started_at desc limit 1",
                [judge_version, input_sha256],
            ),
            None,
        )
        if row:
            return row["id"], True
        started = now()
        run_id = "run-" + content_hash([judge_version, input_sha256, started])[:12]
        with self.transaction():
            self.db["runs"].insert(
                {
                    "id": run_id,
                    "judge_version": judge_version,
                    "input_path": input_path,
                    "input_sha256": input_sha256,
                    "started_at": started,
                    "finished_at": None,
                    "status": "running",
                    "stats": None,
                    "purpose": purpose,
                    "code": code_fingerprint(),
                }
            )
        return run_id, False

    def finish_run(self, run_id: str, stats: dict[str, Any], status: str = "finished") -> None:
        with self.transaction():
            self.db["runs"].update(
                run_id, {"finished_at": now(), "status": status, "stats": _dumps(stats)}
            )

    def run(self, run_id: str) -> dict[str, Any]:
        try:
            return self.db["runs"].get(run_id)
        except sqlite_utils.db.NotFoundError as exc:
            raise StoreError(f"no run {run_id!r} in {self.path}") from exc

    def runs(self) -> list[dict[str, Any]]:
        return list(self.db.query("select * from runs order by started_at"))

    def latest_run_id(self) -> str | None:
        row = next(self.db.query("select id from runs order by started_at desc limit 1"), None)
        return row["id"] if row else None

    def add_rejected_line(self, run_id: str, line: int, error: str) -> None:
        with self.transaction():
            self.db["rejected_lines"].insert(
                {"run_id": run_id, "line": line, "error": error}, replace=True
            )

    # -- answers -------------------------------------------------------------------

    def answer_conflict(self, record: AnswerRecord) -> str | None:
        """An error message when this answer id is stored with different content."""
        row = next(
            self.db.query("select record_sha256 from answers where id = ?", [record.answer_id]),
            None,
        )
        if row and row["record_sha256"] != record_sha(record):
            return (
                f"answer id {record.answer_id!r} is already stored with different content; "
                "give changed answers a new id"
            )
        return None

    def answer_done(self, judge_version: str, answer_id: str) -> bool:
        row = next(
            self.db.query(
                "select 1 from run_answers ra join runs r on r.id = ra.run_id "
                "where r.judge_version = ? and ra.answer_id = ? "
                "and ra.status in ('judged', 'refused') limit 1",
                [judge_version, answer_id],
            ),
            None,
        )
        return row is not None

    def link_answer(
        self, run_id: str, answer_id: str, line: int, judge_version: str
    ) -> list[str]:
        """Record that a run covers an answer already judged by the same judge version.
        Returns the fingerprints of the code known to give its verdicts: the code that
        judged it (unknown when stored before fingerprints were recorded) and any code whose
        replay reproduced them."""
        prior = next(
            self.db.query(
                "select ra.* from run_answers ra join runs r on r.id = ra.run_id "
                "where r.judge_version = ? and ra.answer_id = ? "
                "and ra.status in ('judged','refused') order by ra.finished_at limit 1",
                [judge_version, answer_id],
            )
        )
        with self.transaction():
            self.db["run_answers"].insert({**prior, "run_id": run_id, "line": line}, replace=True)
        known = [prior["code"], *json.loads(prior["reproduced_by"] or "[]")]
        return [code for code in known if code]

    def mark_reproduced(self, judge_version: str, answer_id: str, code: str) -> None:
        """Record that ``code`` re-derived the stored verdicts of an answer exactly (every run
        of the judge version that covers the answer shares those verdicts)."""
        rows = list(self.db.query(
            "select ra.run_id, ra.answer_id, ra.reproduced_by from run_answers ra "
            "join runs r on r.id = ra.run_id where r.judge_version = ? and ra.answer_id = ?",
            [judge_version, answer_id],
        ))
        with self.transaction():
            for row in rows:
                known = json.loads(row["reproduced_by"] or "[]")
                if code not in known:
                    self.db["run_answers"].update(
                        (row["run_id"], row["answer_id"]), {"reproduced_by": _dumps([*known, code])}
                    )

    def backfill_support(self, values: dict[str, float]) -> None:
        """Set the ``support`` of verdicts (by id) that were stored without one."""
        with self.transaction():
            for vid, value in values.items():
                self.db.execute(
                    "update verdicts set support = ? where id = ? and support is null",
                    [value, vid],
                )

    def save_answer_result(
        self,
        run_id: str,
        line: int,
        record: AnswerRecord,
        judge_version: str,
        claims: list[Claim],
        verdicts: list[Verdict],
        status: str,
        answer_status: str | None = None,
        refused_reason: str | None = None,
    ) -> None:
        """Everything about one answer in one transaction: a kill leaves all or nothing."""
        stamp = now()
        with self.transaction():
            self.db["answers"].insert(
                {
                    "id": record.answer_id,
                    "record_sha256": record_sha(record),
                    "question": record.question,
                    "answer": record.answer,
                    "generator": record.generator,
                    "expected_status": record.expected_status,
                    "record": record.model_dump_json(by_alias=True),
                    "first_seen": stamp,
                },
                ignore=True,
            )
            self.db["sources"].insert_all(
                (
                    {
                        "answer_id": record.answer_id,
                        "id": s.id,
                        "title": s.title,
                        "text": s.text,
                        "json": None if s.json_doc is None else _dumps(s.json_doc),
                        "version": s.version,
                        "effective_date": s.effective_date,
                    }
                    for s in record.sources
                ),
                ignore=True,
            )
            for claim in claims:
                self.db["claims"].insert(
                    {
                        "id": claim.id,
                        "answer_id": claim.answer_id,
                        "idx": claim.index,
                        "text": claim.text,
                        "citations": _dumps(
                            [c.model_dump(exclude_none=True) for c in claim.citations]
                        ),
                        "origin": claim.origin,
                        "is_abstention": int(claim.is_abstention),
                    },
                    ignore=True,
                )
                self.db["answer_claims"].insert(
                    {
                        "judge_version": judge_version,
                        "answer_id": claim.answer_id,
                        "claim_id": claim.id,
                        "idx": claim.index,
                    },
                    ignore=True,
                )
            for verdict in verdicts:
                self._insert_verdict(verdict, run_id, stamp)
            self.db["run_answers"].insert(
                {
                    "run_id": run_id,
                    "answer_id": record.answer_id,
                    "line": line,
                    "status": status,
                    "refused_reason": refused_reason,
                    "answer_status": answer_status,
                    "error": None,
                    "finished_at": stamp,
                    "code": code_fingerprint(),
                },
                replace=True,
            )

    def _insert_verdict(self, verdict: Verdict, run_id: str, stamp: str) -> None:
        vid = verdict_id(verdict.judge_version, verdict.claim_id)
        exists = next(self.db.query("select 1 from verdicts where id = ?", [vid]), None)
        if exists:
            return
        self.db["verdicts"].insert(
            {
                "id": vid,
                "judge_version": verdict.judge_version,
                "claim_id": verdict.claim_id,
                "answer_id": verdict.answer_id,
                "run_id": run_id,
                "label": verdict.label,
                "subtype": verdict.subtype,
                "evidence": _dumps([e.model_dump() for e in verdict.evidence]),
                "rationale": verdict.rationale,
                "checks": _dumps([c.model_dump() for c in verdict.checks]),
                "strength": verdict.strength,
                "support": verdict.support,
                "review": int(verdict.review),
                "review_reasons": _dumps(verdict.review_reasons),
                "error": verdict.error,
                "call_ids": _dumps(verdict.call_ids),
                "created_at": stamp,
            }
        )
        self.db["checks"].insert_all(
            (
                {
                    "verdict_id": vid,
                    "seq": i,
                    "name": c.name,
                    "target": c.target,
                    "outcome": c.outcome,
                    "detail": _dumps(c.detail),
                }
                for i, c in enumerate(verdict.checks)
            ),
            replace=True,
        )

    # -- model calls ---------------------------------------------------------------

    def get_call(self, call_id: str) -> dict[str, Any] | None:
        return next(self.db.query("select * from calls where id = ?", [call_id]), None)

    def save_call(self, row: dict[str, Any]) -> None:
        """Calls are saved as soon as they return, so a killed run loses none. A failed
        call is replaced by a later successful one with the same key."""
        row = {k: (_dumps(v) if isinstance(v, dict | list) else v) for k, v in row.items()}
        with self.transaction():
            self.db["calls"].insert(row, replace=True)

    # -- reading -------------------------------------------------------------------

    def answer(self, answer_id: str) -> dict[str, Any] | None:
        return next(self.db.query("select * from answers where id = ?", [answer_id]), None)

    def answer_record(self, answer_id: str) -> AnswerRecord | None:
        row = self.answer(answer_id)
        return AnswerRecord.model_validate_json(row["record"]) if row else None

    def verdict_rows(
        self,
        run_id: str | None = None,
        answer_id: str | None = None,
        judge_version: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Claim-level rows (claim joined with its verdict), in answer and claim order."""
        where, params = [], []
        if run_id:
            run = self.run(run_id)
            where.append(
                "v.answer_id in (select answer_id from run_answers where run_id = ?) "
                "and v.judge_version = ?"
            )
            params += [run_id, run["judge_version"]]
        if answer_id:
            where.append("v.answer_id = ?")
            params.append(answer_id)
        if judge_version:
            where.append("v.judge_version = ?")
            params.append(judge_version)
        sql = (
            "select v.*, c.text as claim, c.citations, c.idx, c.origin, c.is_abstention "
            "from verdicts v join claims c on c.id = v.claim_id "
            + ("where " + " and ".join(where) if where else "")
            + " order by v.answer_id, v.judge_version, c.idx"
        )
        for row in self.db.query(sql, params):
            for key in ("evidence", "checks", "review_reasons", "call_ids", "citations"):
                row[key] = json.loads(row[key]) if row[key] else []
            row["review"] = bool(row["review"])
            row["is_abstention"] = bool(row["is_abstention"])
            yield row

    def run_answer_rows(self, run_id: str) -> list[dict[str, Any]]:
        return list(
            self.db.query("select * from run_answers where run_id = ? order by line", [run_id])
        )

    def rejected_lines(self, run_id: str) -> list[dict[str, Any]]:
        return list(
            self.db.query(
                "select line, error from rejected_lines where run_id = ? order by line", [run_id]
            )
        )


def record_sha(record: AnswerRecord) -> str:
    return content_hash(record.model_dump(mode="json", by_alias=True))
