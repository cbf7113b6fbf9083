from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlite_utils

from judge.config import JudgeConfig
from judge.records import AnswerRecord
from judge.store import Lease, Store
from judge.store.migrations import MIGRATIONS
from judge.verdicts import Claim, Verdict
from tests.fakes import FakeLLM
from tests.support.old_stores import store_upto

REC = AnswerRecord.model_validate(
    {"id": "a", "answer": "401 [S1].", "sources": [{"id": "S1", "text": "401"}]}
)


def test_answer_result_is_all_or_nothing(store: Store) -> None:
    run_id, _ = store.start_run("v@1", "in.jsonl", "sha")
    claim = Claim(id="c1", answer_id="a", index=0, text="401")
    bad = Verdict(claim_id="c1", answer_id="a", judge_version="v@1", label="supported")
    object.__setattr__(bad, "evidence", object())  # not serialisable: fails mid-transaction
    with pytest.raises(Exception):  # noqa: B017
        store.save_answer_result(run_id, 1, REC, "v@1", [claim], [bad], status="judged")
    for table in ("answers", "sources", "claims", "answer_claims", "verdicts", "run_answers"):
        assert store.db[table].count == 0, table


def test_one_admission_decides_done_redo_misruled_and_conflict(store: Store) -> None:
    """The one decision every run takes per record: a look and a claim agree; a retry of an
    answer with a judge_error is judged again with the call behind the error made anew."""
    run_id, _ = store.start_run("v@1", "in.jsonl", "sha")
    claim = Claim(id="c1", answer_id="a", index=0, text="401")
    error = Verdict(claim_id="c1", answer_id="a", judge_version="v@1", label="judge_error",
                    call_ids=["call-1", "call-2"], rule="default")
    assert store.admit(REC, "v@1").decision == "judge"
    store.save_answer_result(run_id, 1, REC, "v@1", [claim], [error], status="judged")
    lease = Lease(run_id, "me")
    assert store.admit(REC, "v@1").decision == "done"
    assert store.admit(REC, "v@1", lease=lease).decision == "done"
    assert store.count("select count(*) from answer_leases") == 0  # done: no lease taken
    retry = store.admit(REC, "v@1", retry_errors=True, lease=lease)
    assert (retry.decision, retry.redo, retry.refresh) == ("judge", True, {"call-2"})
    assert store.count("select count(*) from answer_leases") == 1
    moved = store.admit(REC, "v@1", rule="support", domain="support")
    assert moved.decision == "misruled" and moved.rejected
    assert "now selects rule 'support'" in (moved.reason or "")
    assert store.admit(REC, "v@1", rule="default").decision == "done"
    assert store.admit(REC, "v@2", rule="support").decision == "judge"  # another version
    changed = AnswerRecord.model_validate({**REC.model_dump(by_alias=True), "answer": "403"})
    assert store.admit(changed, "v@2").decision == "conflict"
    store.save_answer_result(run_id, 1, REC, "v@1", [claim], [error], status="judged",
                             redo=True, holder="me")  # the result releases the lease
    assert store.count("select count(*) from answer_leases") == 0


def test_migrations_are_recorded_once_even_when_opened_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            Store.open(path).close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("select name from _migrations order by name")]
        mode = conn.execute("pragma journal_mode").fetchone()[0]
    assert names == sorted(name for name, _ in MIGRATIONS) and mode == "wal"


def test_a_store_of_the_first_schema_upgrades_and_its_verdicts_are_reused(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """A store written by the first schema (m001 only) opens under the current code: every
    later migration is applied in order, nothing stored is lost, and its verdicts are served
    again with no model call."""
    import judge

    answers = [{"id": "old", "answer": "HTTP 401 means unauthenticated [S1]. It is rare [S1].",
                "sources": [{"id": "S1", "text": "HTTP 401 means unauthenticated."}]}]
    current = tmp_path / "current.db"
    first = judge.judge_answers(answers, config=config, db=current)
    # the same data, as the first schema held it
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    db = sqlite_utils.Database(conn)
    name, m001 = MIGRATIONS[0]
    m001(db)
    db["_migrations"].insert({"name": name, "applied_at": "2026-01-01T00:00:00"}, pk="name")
    src = sqlite_utils.Database(sqlite3.connect(current))
    for table in ("judge_versions", "runs", "answers", "sources", "run_answers", "claims",
                  "answer_claims", "verdicts", "checks", "calls", "rejected_lines"):
        columns = set(db[table].columns_dict)
        db[table].insert_all({k: v for k, v in row.items() if k in columns}
                             for row in src[table].rows)
    conn.commit()
    conn.close()
    store = Store.open(old)
    try:
        applied = [r["name"] for r in store.db["_migrations"].rows]
        assert applied == [n for n, _ in MIGRATIONS]
        assert "support" in store.db["verdicts"].columns_dict
        assert "code" in store.db["runs"].columns_dict and store.db["queues"].exists()
        again = judge.judge_answers(answers, config=config, db=store)
        assert again.summary.model_calls == 0 and again.summary.answers_from_store == 1
        assert again.summary.answers_from_other_code == 1  # no fingerprint was recorded then
        assert [v.model_dump() for v in again[0].verdicts] == \
            [v.model_dump() for v in first[0].verdicts]
    finally:
        store.close()


def test_rows_in_reads_any_number_of_values_in_chunks(tmp_path: Path) -> None:
    """More values than one query may bind (IN_CHUNK per query): every matching row once."""
    from judge.store.base import IN_CHUNK

    store = Store.open(tmp_path / "s.db")
    store.db.execute("create table t (id text primary key)")
    store.db["t"].insert_all({"id": f"v{k}"} for k in range(3 * IN_CHUNK))
    wanted = [f"v{k}" for k in range(0, 3 * IN_CHUNK, 2)] + ["absent"]
    got = [r["id"] for r in store.rows_in("select id from t where id in ({marks})", wanted)]
    assert sorted(got) == sorted(wanted[:-1]) and len(got) == len(set(got))
    assert list(store.rows_in("select id from t where id in ({marks})", [])) == []
    store.close()


def test_a_store_from_before_operating_points_upgrades_and_its_queues_still_read(
    tmp_path: Path,
) -> None:
    """A store whose last migration is m011 (queues without operating points) opens with
    m012 applied: its queue reads with no operating points, and the recall watch says it
    cannot estimate yet instead of failing."""
    from judge.review.triage import recall_watch

    path = tmp_path / "m011.db"
    with store_upto(path, "m011_probe_heads") as db:
        db["queues"].insert({"id": "q-old", "created_at": "2026-11-01T00:00:00",
                             "run_ids": "[]", "judge_versions": "[]", "seed": 0,
                             "strata": "{}", "items": 0, "priority": "[]"})
    store = Store.open(path)
    try:
        assert "m012_operating_points" in [r["name"] for r in store.db["_migrations"].rows]
        assert store.db["operating_points"].exists()
        assert "inclusion_probability" in store.db["queue_items"].columns_dict
        queue = store.queue_row("q-old")
        assert queue is not None and queue["operating_points"] == []
        watch = recall_watch(store, "q-old")
        assert watch is not None and watch["status"] == "not_estimable"
    finally:
        store.close()


def test_a_store_from_before_batch_jobs_upgrades_and_keeps_them_by_call(tmp_path: Path) -> None:
    """A store whose last migration is m013 opens with m016 (batch jobs) applied: a batch job and its
    calls are recorded, found again by call id while open (for its provider only), and no
    longer once read."""
    path = tmp_path / "m013.db"
    with store_upto(path, "m013_operating_point_score"):
        pass
    store = Store.open(path)
    try:
        assert "m016_batch_jobs" in [r["name"] for r in store.db["_migrations"].rows]
        store.add_batch_job({"id": "bj-1", "run_id": "run-1", "model": "openai/m",
                             "provider": "openai", "endpoint": "/v1/chat/completions",
                             "phase": 1, "state": "preparing", "requests": 2},
                            ["call-a", "call-b"])
        store.update_batch_job("bj-1", input_file_id="file-1", batch_id="batch-1",
                               state="submitted", counts={"status": "in_progress"})
        assert store.open_batch_jobs(["call-b", "call-c"], "openai") == {"bj-1": ["call-b"]}
        assert store.open_batch_jobs(["call-b"], "azure") == {}
        job = store.batch_job("bj-1")
        assert job is not None and job["batch_id"] == "batch-1" and job["phase"] == 1
        assert store.batch_job_calls("bj-1") == ["call-a", "call-b"]
        store.update_batch_job("bj-1", state="read")
        assert store.open_batch_jobs(["call-a"], "openai") == {}
    finally:
        store.close()
