"""m007: foreign keys on every link and the views claim_verdicts, review_queue and
calibration_errors, applied to a store that already holds data; Datasette serves them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import adjudicate, record_review
from judge.store import Store
from judge.store.metadata import datasette_metadata
from judge.store.migrations import LINKS, MIGRATIONS, VIEWS
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM
from tests.review_helpers import known_store

TABLES = ("judge_versions", "runs", "answers", "sources", "run_answers", "rejected_lines",
          "claims", "answer_claims", "verdicts", "checks", "calls", "call_attempts", "queues",
          "queue_items", "reviews", "adjudications")


def _reviewed_store(folder: Path) -> tuple[Store, str]:
    """The known store with a queue over everything, reviews and one adjudication."""
    store = known_store(folder)
    summary = build_queue(store, options=QueueOptions(sample_rate=1.0, double_fraction=0.0))
    items = {i["answer_id"]: i for i in queue_items(store, summary.queue_id)}
    # people agree the judge was right on a passed claim, and wrong on another
    record_review(store, items["pass-00"]["subject"], "alice", "supported")
    record_review(store, items["pass-01"]["subject"], "alice", "not_in_source",
                  subtype="unsupported_addition")
    record_review(store, items["pass-01"]["subject"], "bob", "not_in_source",
                  subtype="unsupported_addition")
    # the judge said not_in_source; two people disagree; an adjudicator says supported
    nis = items["nis-0"]["subject"]
    record_review(store, nis, "alice", "supported")
    record_review(store, nis, "bob", "not_in_source", subtype="unsupported_addition")
    adjudicate(store, nis, "carol", "supported", None, "the register lists it")
    return store, summary.queue_id


def _old_schema_copy(src: Path, target: Path) -> None:
    """The same data as a store before m007 held it (m001-m006 applied)."""
    conn = sqlite3.connect(target)
    db = sqlite_utils.Database(conn)
    db["_migrations"].create({"name": str, "applied_at": str}, pk="name")
    for name, fn in MIGRATIONS:
        if name.startswith("m007"):
            break
        fn(db)
        db["_migrations"].insert({"name": name, "applied_at": "2026-01-01T00:00:00"})
    old = sqlite_utils.Database(sqlite3.connect(src))
    for table in TABLES:  # the columns the old schema has (later migrations add more)
        columns = set(db[table].columns_dict)
        db[table].insert_all({k: v for k, v in row.items() if k in columns}
                             for row in old[table].rows)
    conn.commit()
    conn.close()


def test_m007_keeps_every_row_and_index_and_declares_every_link(tmp_path: Path) -> None:
    store, _ = _reviewed_store(tmp_path)
    counts = {t: store.db[t].count for t in TABLES}
    assert counts["reviews"] == 5 and counts["verdicts"] > 70
    store.close()
    old = tmp_path / "old.db"
    _old_schema_copy(tmp_path / "known.db", old)
    before = sqlite_utils.Database(sqlite3.connect(old))
    indexes = {t: sorted(i.name for i in before[t].indexes) for t in TABLES}
    rows = {t: sorted(map(json.dumps, before[t].rows)) for t in ("verdicts", "reviews")}
    columns = {t: list(before[t].columns_dict) for t in ("verdicts", "reviews")}
    assert not before["verdicts"].foreign_keys and not before.view_names()
    before.conn.close()

    upgraded = Store.open(old)
    try:
        db = upgraded.db
        assert "m007_views_and_keys" in [r["name"] for r in db["_migrations"].rows]
        assert {t: db[t].count for t in TABLES} == counts
        assert {t: sorted(i.name for i in db[t].indexes) for t in TABLES} == indexes
        for table in ("verdicts", "reviews"):  # later migrations may add columns
            kept = [{c: row[c] for c in columns[table]} for row in db[table].rows]
            assert sorted(map(json.dumps, kept)) == rows[table]
        declared = {(fk.table, fk.column, fk.other_table, fk.other_column)
                    for t in TABLES for fk in db[t].foreign_keys}
        assert set(LINKS) <= declared
        assert set(VIEWS) <= set(db.view_names())
        # a unique index still rejects a duplicate verdict
        row = next(iter(db["verdicts"].rows))
        with pytest.raises(sqlite3.IntegrityError):
            db["verdicts"].insert({**row, "id": "v-duplicate"})
    finally:
        upgraded.close()


def test_views_link_claims_verdicts_queue_and_human_decisions(tmp_path: Path) -> None:
    store, queue_id = _reviewed_store(tmp_path)
    try:
        verdicts = store.rows("select * from claim_verdicts")
        assert len(verdicts) == store.db["verdicts"].count
        nis = next(v for v in verdicts if v["answer_id"] == "nis-0")
        assert nis["label"] == "not_in_source" and nis["claim"].startswith("Item")
        assert "label:not_in_source" in nis["review_reasons"]
        assert not nis["review_reasons"].startswith("[")  # readable, not JSON

        queue = store.rows("select * from review_queue where queue_id = ? order by position",
                           [queue_id])
        assert [q["position"] for q in queue] == list(range(1, len(queue) + 1))
        by_answer = {q["answer_id"]: q for q in queue}
        assert by_answer["nis-0"]["reviewers"] == 2 and by_answer["nis-0"]["adjudicated"] == 1
        assert by_answer["selfmade"]["kind"] == "answer" and by_answer["selfmade"]["claim"]

        errors = {e["answer_id"]: e for e in store.rows("select * from calibration_errors")}
        # pass-00: agreed supported = judge: no error; pass-01: people say not_in_source
        assert set(errors) == {"pass-01", "nis-0"}
        assert errors["pass-01"]["direction"] == "lenient"
        assert errors["pass-01"]["decided_by"] == "agreed reviews"
        assert errors["pass-01"]["annotators"] == "human:alice, human:bob"
        assert errors["nis-0"]["direction"] == "strict"
        assert errors["nis-0"]["decided_by"] == "adjudication"
        assert errors["nis-0"]["human_label"] == "supported"
    finally:
        store.close()


def test_datasette_serves_the_views_with_links(tmp_path: Path) -> None:
    datasette_app = pytest.importorskip("datasette.app")
    store, _ = _reviewed_store(tmp_path)
    store.close()
    db_path = tmp_path / "known.db"
    metadata = datasette_metadata(db_path.stem)
    ds = datasette_app.Datasette([str(db_path)], metadata=metadata)

    async def fetch() -> dict[str, dict]:
        out = {}
        for path in ("/known/claim_verdicts.json?label=not_in_source&_shape=objects",
                     "/known/review_queue.json?_shape=objects&_size=5",
                     "/known/calibration_errors.json?_shape=objects",
                     "/known/verdicts.json?_labels=on&_shape=objects&_size=1",
                     "/known.json"):
            response = await ds.client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            out[path.split(".json")[0]] = response.json()
        return out

    got = asyncio.run(fetch())
    rows = got["/known/claim_verdicts"]["rows"]
    assert {f"nis-{k}" for k in range(6)} <= {r["answer_id"] for r in rows}
    assert all(r["label"] == "not_in_source" and r["claim"] for r in rows)
    assert len(got["/known/review_queue"]["rows"]) == 5
    assert {r["answer_id"] for r in got["/known/calibration_errors"]["rows"]} == \
        {"pass-01", "nis-0"}
    # a verdict's claim_id is a link that shows the claim's text (label_column)
    claim = got["/known/verdicts"]["rows"][0]["claim_id"]
    assert isinstance(claim, dict) and claim["label"].startswith("Item")
    views = {v["name"] for v in got["/known"]["views"]}
    assert set(VIEWS) <= views


def test_datasette_names_judge_versions_by_id_and_eval_gold_runs_as_such(
    tmp_path: Path, fake_llm: FakeLLM,
) -> None:
    from judge.api import eval_gold, judge_answers
    from judge.config import JudgeConfig
    from tests.research.test_quality_block import gold_items

    datasette_app = pytest.importorskip("datasette.app")
    db_path = tmp_path / "two.db"
    record = {"id": "a", "answer": "401 means unauthenticated [S1].",
              "sources": [{"id": "S1", "text": "401 means unauthenticated."}]}
    # two versions of one model: other sampling settings
    versions = {judge_answers([record], config=JudgeConfig(model="fake/judge-model", seed=seed,
                                                            strategy="batch"),
                              db=db_path).summary.judge_version for seed in (0, 1)}
    assert len(versions) == 2
    gold = write_jsonl(tmp_path / "gold.jsonl", gold_items())
    eval_gold(gold, config=JudgeConfig(model="fake/judge-model", strategy="batch"), db=db_path)
    ds = datasette_app.Datasette([str(db_path)], metadata=datasette_metadata(db_path.stem))

    async def fetch(path: str) -> dict:
        response = await ds.client.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        return response.json()

    verdicts = asyncio.run(fetch("/two/verdicts.json?_labels=on&_shape=objects&_size=100"))
    shown = {r["judge_version"]["label"] for r in verdicts["rows"]}
    assert versions <= shown  # by version id, so the two versions of one model differ
    runs = asyncio.run(fetch("/two/runs.json?_shape=objects"))["rows"]
    evals = [r for r in runs if r["purpose"] == "eval"]
    assert len(evals) == 1 and evals[0]["input_path"] == f"eval-gold {gold}"
