"""Answers, their sources, claims and verdicts: written one answer per transaction, read as
claim-level rows (the answer view)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from judge.fingerprint import code_fingerprint
from judge.masking import mask
from judge.records import AnswerRecord
from judge.store.admission import AdmissionMixin, AnswerConflict
from judge.store.base import dumps, now, record_sha, verdict_id
from judge.store.runs import RunsMixin
from judge.verdicts import Claim, Verdict

#: JSON columns of the answer view.
_JSON_COLUMNS = ("evidence", "checks", "review_reasons", "call_ids", "citations")


class AnswersMixin(RunsMixin, AdmissionMixin):
    """Reads runs (a run's judge version), so it builds on :class:`RunsMixin`; refuses an id
    stored with other content as admission does (:class:`AdmissionMixin`)."""

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
            self.db.table("run_answers").insert(
                {**prior, "run_id": run_id, "line": line}, replace=True
            )
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
                    self.db.table("run_answers").update(
                        (row["run_id"], row["answer_id"]), {"reproduced_by": dumps([*known, code])}
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
        skipped: list[dict[str, Any]] | None = None,
        redo: bool = False,
        holder: str | None = None,
    ) -> None:
        """Everything about one answer in one transaction: a kill leaves all or nothing.

        Raises :class:`~judge.store.admission.AnswerConflict` (and writes nothing) when the
        id is stored with different content, checked inside the write transaction (a lease
        can lapse), so whichever run comes first wins. ``redo`` (a retry of an answer with
        ``judge_error`` verdicts) replaces the judge version's earlier claims and verdicts of
        the answer, keeping the verdicts in ``superseded_verdicts``. ``holder``'s lease on the
        answer is released."""
        stamp, sha = now(), record_sha(record)
        with self.transaction():
            conflict = self.content_conflict(record, sha)
            if conflict:
                raise AnswerConflict(conflict)
            if redo:
                self._supersede(judge_version, record.answer_id, run_id, stamp)
            self.insert_rows("answers", [
                {
                    "id": record.answer_id,
                    "record_sha256": sha,
                    "question": record.question,
                    "answer": record.answer,
                    "generator": record.generator,
                    "expected_status": record.expected_status,
                    "record": record.model_dump_json(by_alias=True),
                    "first_seen": stamp,
                }], "ignore")
            self.insert_rows("sources",
                (
                    {
                        "answer_id": record.answer_id,
                        "id": s.id,
                        "title": s.title,
                        "text": s.text,
                        "json": None if s.json_doc is None else dumps(s.json_doc),
                        "version": s.version,
                        "effective_date": s.effective_date,
                    }
                    for s in record.sources
                ),
                "ignore",
            )
            self.insert_rows("claims",
                [
                    {
                        "id": claim.id,
                        "answer_id": claim.answer_id,
                        "idx": claim.index,
                        "text": claim.text,
                        "citations": dumps(
                            [c.model_dump(exclude_none=True) for c in claim.citations]
                        ),
                        "origin": claim.origin,
                        "is_abstention": int(claim.is_abstention),
                    }
                    for claim in claims
                ],
                "ignore",
            )
            self.insert_rows("answer_claims",
                [
                    {
                        "judge_version": judge_version,
                        "answer_id": claim.answer_id,
                        "claim_id": claim.id,
                        "idx": claim.index,
                    }
                    for claim in claims
                ],
                "ignore",
            )
            self._insert_verdicts(verdicts, run_id, stamp)
            self.insert_rows(
                "split_skips",
                ({"judge_version": judge_version, "answer_id": record.answer_id, **skip}
                 for skip in skipped or []),
                "replace",
            )
            if holder is not None:
                self.db.execute("delete from answer_leases where holder = ? and answer_id = ?",
                                [holder, record.answer_id])
            self.insert_rows("run_answers", [
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
                }], "replace")

    def _supersede(self, judge_version: str, answer_id: str, run_id: str, stamp: str) -> None:
        """Move a judge version's verdicts of an answer to ``superseded_verdicts`` and forget
        its claims and skipped sentences (a retry writes them anew)."""
        rows = self.rows("select * from verdicts where judge_version = ? and answer_id = ?",
                         [judge_version, answer_id])
        self.db.table("superseded_verdicts").insert_all(
            {"id": r["id"], "answer_id": answer_id, "judge_version": judge_version,
             "row": dumps(r), "superseded_at": stamp, "run_id": run_id} for r in rows)
        for r in rows:
            self.db.execute("delete from checks where verdict_id = ?", [r["id"]])
            self.db.execute("delete from verdicts where id = ?", [r["id"]])
        for table in ("answer_claims", "split_skips"):
            self.db.execute(f"delete from {table} where judge_version = ? and answer_id = ?",
                            [judge_version, answer_id])

    def split_skips(self, answer_id: str, judge_version: str | None = None
                    ) -> list[dict[str, Any]]:
        """Sentences the split found no claim in, with the reason."""
        sql = "select * from split_skips where answer_id = ?"
        params: list[Any] = [answer_id]
        if judge_version:
            sql += " and judge_version = ?"
            params.append(judge_version)
        return self.rows(sql + " order by judge_version, sentence", params)

    def _insert_verdicts(self, verdicts: list[Verdict], run_id: str, stamp: str) -> None:
        """Insert verdicts (and their checks) not stored yet; a verdict already stored under
        its id (same judge version and claim) is kept as it is."""
        ids = [verdict_id(v.judge_version, v.claim_id) for v in verdicts]
        if not ids:
            return
        stored = {row["id"] for row in self.rows_in(
            "select id from verdicts where id in ({marks})", ids)}
        fresh: dict[str, Verdict] = {}
        for vid, verdict in zip(ids, verdicts, strict=True):
            if vid not in stored and vid not in fresh:
                fresh[vid] = verdict
        self.insert_rows(
            "verdicts", [
                {
                    "id": vid,
                    "judge_version": verdict.judge_version,
                    "claim_id": verdict.claim_id,
                    "answer_id": verdict.answer_id,
                    "run_id": run_id,
                    "label": verdict.label,
                    "subtype": verdict.subtype,
                    "evidence": dumps([e.model_dump() for e in verdict.evidence]),
                    "rationale": verdict.rationale,
                    "checks": dumps([c.model_dump() for c in verdict.checks]),
                    "strength": verdict.strength,
                    "support": verdict.support,
                    "review": int(verdict.review),
                    "review_reasons": dumps(verdict.review_reasons),
                    "error": mask(verdict.error) if verdict.error else None,
                    "call_ids": dumps(verdict.call_ids),
                    "created_at": stamp,
                    "rule": verdict.rule,
                }
                for vid, verdict in fresh.items()
            ]
        )
        self.insert_rows(
            "checks", [
                {
                    "verdict_id": vid,
                    "seq": i,
                    "name": c.name,
                    "target": c.target,
                    "outcome": c.outcome,
                    "detail": dumps(c.detail),
                }
                for vid, verdict in fresh.items()
                for i, c in enumerate(verdict.checks)
            ],
            "replace",
        )

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

    def claim_verdict_row(self, judge_version: str, claim_id: str) -> dict[str, Any] | None:
        """A judge version's verdict of a claim as a claim-level row (as
        :meth:`verdict_rows`); when a retry (``--retry-errors``) replaced it and judged the
        answer's claims anew without this claim, the newest superseded row, marked
        ``superseded`` with the time it was replaced. None when there never was one."""
        vid = verdict_id(judge_version, claim_id)
        row = self.one(
            "select v.*, c.text as claim, c.citations, c.idx, c.origin, c.is_abstention "
            "from verdicts v join claims c on c.id = v.claim_id where v.id = ?", [vid])
        superseded_at = None
        if row is None:
            old = self.one("select row, superseded_at from superseded_verdicts where id = ? "
                           "order by seq desc limit 1", [vid])
            claim = self.one("select text, citations, idx, origin, is_abstention from claims "
                             "where id = ?", [claim_id])
            if old is None or claim is None:
                return None
            row = {**json.loads(old["row"]), "claim": claim["text"], **{
                k: claim[k] for k in ("citations", "idx", "origin", "is_abstention")}}
            superseded_at = old["superseded_at"]
        for key in _JSON_COLUMNS:
            row[key] = json.loads(row[key]) if row.get(key) else []
        row["review"] = bool(row["review"])
        row["is_abstention"] = bool(row["is_abstention"])
        row["superseded"] = superseded_at
        return row

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


    def claim_row(self, claim_id: str) -> dict[str, Any] | None:
        """A claim (answer id, text, citations decoded)."""
        row = self.one("select * from claims where id = ?", [claim_id])
        if row is not None:
            row["citations"] = json.loads(row["citations"]) if row["citations"] else []
        return row

    def answer_generators(self) -> dict[str, str | None]:
        """Answer id → generator, for every stored answer."""
        return {r["id"]: r["generator"] for r in self.db.query("select id, generator from answers")}

    def source_rows(self) -> Iterator[dict[str, Any]]:
        """Every stored source (answer id, text, JSON document decoded)."""
        for row in self.db.query("select answer_id, id, text, json from sources"):
            row["json"] = json.loads(row["json"]) if row["json"] is not None else None
            yield row

    def verdicts(self, answer_id: str, judge_version: str) -> list[Verdict]:
        """An answer's verdicts by one judge version, in claim order."""
        keep = set(Verdict.model_fields)
        return [
            Verdict.model_validate({k: v for k, v in row.items() if k in keep})
            for row in self.verdict_rows(answer_id=answer_id, judge_version=judge_version)
        ]
