"""Judge versions, runs, the answers a run covers and the lines it rejected."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils

from judge.fingerprint import code_fingerprint
from judge.hashing import content_hash
from judge.masking import mask
from judge.store.base import StoreBase, StoreError, dumps, now


class RunsMixin(StoreBase):
    def ensure_judge_version(
        self, version: str, model: str, config: dict[str, Any], templates: dict[str, str]
    ) -> None:
        with self.transaction():
            self.db.table("judge_versions").insert(
                {
                    "id": version,
                    "model": model,
                    "config": dumps(config),
                    "templates": dumps(templates),
                    "created_at": now(),
                },
                ignore=True,
            )

    def save_probe_heads(self, bodies: dict[str, str]) -> None:
        """Keep the text of each probe head (by sha256) a judge version uses."""
        if not bodies:
            return
        with self.transaction():
            self.db.table("probe_heads").insert_all(
                [{"sha256": sha, "body": body, "created_at": now()}
                 for sha, body in bodies.items()], ignore=True)

    def probe_head_bodies(self) -> dict[str, str]:
        """Every probe head kept in the store, by sha256."""
        return {r["sha256"]: r["body"] for r in self.db.query(
            "select sha256, body from probe_heads")}

    def judge_versions(self) -> list[dict[str, Any]]:
        return list(self.db.query("select * from judge_versions order by created_at"))

    def start_run(
        self, judge_version: str, input_path: str, input_sha256: str, purpose: str = "run"
    ) -> tuple[str, bool]:
        """Resume the unfinished run (running, or stopped by the breaker or a budget) of the
        same input and judge version, else start one. Returns (run_id, resumed)."""
        row = next(
            self.db.query(
                "select id from runs where judge_version = ? and input_sha256 = ? "
                "and status in ('running', 'stopped') order by started_at desc limit 1",
                [judge_version, input_sha256],
            ),
            None,
        )
        if row:
            return row["id"], True
        started = now()
        run_id = "run-" + content_hash([judge_version, input_sha256, started])[:12]
        with self.transaction():
            self.db.table("runs").insert(
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
            self.db.table("runs").update(
                run_id, {"finished_at": now(), "status": status, "stats": mask(dumps(stats))}
            )

    def run(self, run_id: str) -> dict[str, Any]:
        try:
            return self.db.table("runs").get(run_id)
        except sqlite_utils.db.NotFoundError as exc:
            raise StoreError(f"no run {run_id!r} in {self.path}") from exc

    def runs(self) -> list[dict[str, Any]]:
        return list(self.db.query("select * from runs order by started_at"))

    def latest_run_id(self) -> str | None:
        row = next(self.db.query("select id from runs order by started_at desc limit 1"), None)
        return row["id"] if row else None

    def add_rejected_line(self, run_id: str, line: int, error: str) -> None:
        with self.transaction():
            self.db.table("rejected_lines").insert(
                {"run_id": run_id, "line": line, "error": mask(error)}, replace=True
            )


    def judge_version_row(self, version: str) -> dict[str, Any] | None:
        """A judge version's row with its config and templates decoded."""
        row = self.one("select * from judge_versions where id = ?", [version])
        if row is not None:
            row["config"] = json.loads(row["config"])
            row["templates"] = json.loads(row["templates"])
        return row

    def version_usage(self, version: str) -> tuple[int, int]:
        """(runs, verdicts) of a judge version."""
        return (
            self.count("select count(*) from runs where judge_version = ?", [version]),
            self.count("select count(*) from verdicts where judge_version = ?", [version]),
        )

    def run_answer_count(self, run_id: str) -> int:
        return self.count("select count(*) from run_answers where run_id = ?", [run_id])

    def refused_reason(self, answer_id: str, judge_version: str | None = None) -> str | None:
        """Why the judge (of ``judge_version``, or any) refused to grade an answer, if it did."""
        sql = ("select ra.refused_reason from run_answers ra join runs r on r.id = ra.run_id "
               "where ra.answer_id = ? and ra.status = 'refused'")
        params: list[Any] = [answer_id]
        if judge_version is not None:
            sql += " and r.judge_version = ?"
            params.append(judge_version)
        row = self.one(sql + " limit 1", params)
        return row["refused_reason"] if row else None

    def answer_statuses(self, answer_id: str) -> set[str]:
        """The statuses (answered / partial / insufficient) runs gave an answer."""
        return {
            r["answer_status"] for r in self.db.query(
                "select answer_status from run_answers where answer_id = ? and answer_status "
                "is not null", [answer_id])
        }
