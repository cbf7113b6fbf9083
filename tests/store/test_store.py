from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from judge.records import AnswerRecord
from judge.store import Store
from judge.store.migrations import MIGRATIONS
from judge.verdicts import Claim, Verdict

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
