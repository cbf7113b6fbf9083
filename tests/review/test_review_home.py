"""Reviews need a home: a review of a claim no queue holds is accepted but cannot become gold
(its stratum and weight come from a queue), so `export_gold` and `judge gold export` count
it, name it and say how to give it one; once a queue holds the claim, it is exported."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import judge
from judge.cli import _register, app
from judge.review.queue import QueueOptions, build_queue
from judge.store import Store
from tests.review_helpers import known_store


@pytest.fixture
def known(tmp_path: Path) -> Iterator[Store]:
    store = known_store(tmp_path)
    yield store
    store.close()


def _claim(store: Store) -> str:
    row = store.one("select id from claims order by id limit 1", [])
    assert row is not None
    return str(row["id"])


def test_a_review_outside_every_queue_is_counted_named_and_held_back(known: Store) -> None:
    assert known.one("select count(*) as n from queue_items", [])["n"] == 0
    claim = _claim(known)
    judge.record_review(claim, "supported", annotator="alice", db=known)
    judge.record_review(claim, "supported", annotator="bob", db=known)
    out = io.StringIO()
    summary = judge.export_gold(out, db=known)
    assert summary.exported == 0 and out.getvalue() == ""
    assert summary.outside_queues == [claim]
    line = summary.held_back()
    assert f"1 reviewed outside every review queue ({claim})" in line
    assert "judge queue build --run RUN_ID" in line

    _register()
    cli = CliRunner().invoke(app, ["gold", "export", "--db", str(known.path)])
    assert cli.exit_code == 0
    assert "reviewed outside every review queue" in " ".join(cli.output.split())

    # a queue that holds the claim gives the reviews a home: exported, nothing held back
    run_id = known.one("select run_id from verdicts where claim_id = ?", [claim])["run_id"]
    build_queue(known, [run_id], QueueOptions(seed=1, sample_rate=1.0, double_fraction=0.0))
    again = judge.export_gold(io.StringIO(), db=known)
    assert again.outside_queues == []
    assert again.exported >= 1


def test_an_export_refuses_a_queue_older_than_the_latest_run_naming_both_ways_on(
        known: Store, tmp_path: Path, fake_llm: object) -> None:
    from judge.config import JudgeConfig
    from judge.review.queue import QueueError

    old = build_queue(known, None, QueueOptions(seed=1, sample_rate=1.0)).queue_id
    config = JudgeConfig(model="fake/judge-model", strategy="batch", signals=False)
    judge.judge_answers([{"id": "later", "answer": "401 means unauthenticated [S1].",
                          "sources": [{"id": "S1", "text": "401 means unauthenticated."}]}],
                        config=config, db=known)
    with pytest.raises(QueueError) as stale:
        judge.export(io.StringIO(), "label-studio", db=known)
    message = str(stale.value)
    assert f"latest review queue {old} was built before run" in message
    assert "judge.build_queue()" in message and f"--queue {old}" in message
    named = io.StringIO()
    judge.export(named, "label-studio", db=known, queue=old)  # named: exported as it is
    assert named.getvalue().startswith("[")
    build_queue(known, None, QueueOptions(seed=1, sample_rate=1.0))
    fresh = io.StringIO()
    judge.export(fresh, "argilla", db=known)
    assert 'later' in fresh.getvalue()  # the new run's claim is in the fresh queue
