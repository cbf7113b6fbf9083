"""No output option can destroy the store or an input: every command that writes a file refuses
the store (and its WAL/SHM files) and its inputs with exit code 64 before writing anything,
and writes through a temporary file renamed into place."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import _register, app
from judge.outputs import OutputError, atomic_text, check_output
from judge.review.queue import QueueOptions, build_queue
from judge.store import Store
from tests.review_helpers import known_store

USAGE = 64


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    store = known_store(tmp_path)
    build_queue(store, options=QueueOptions(seed=5))
    path = store.path
    store.close()
    assert path is not None
    yield path


def invoke(*args: str) -> object:
    _register()
    return CliRunner().invoke(app, list(args))


def counts(db: Path) -> tuple[int, int]:
    store = Store.open(db)
    try:
        return (store.db.execute("select count(*) from verdicts").fetchone()[0],
                store.db.execute("select count(*) from queue_items").fetchone()[0])
    finally:
        store.close()


def writing_commands(db: Path, target: str) -> list[list[str]]:
    return [
        ["export", "--db", str(db), "-o", target],
        ["export", "--db", str(db), "--format", "label-studio", "-o", target],
        ["export", "--db", str(db), "--format", "parquet", "-o", target],
        ["queue", "export", "--db", str(db), "-o", target],
        ["queue", "export", "--db", str(db), "--format", "csv", "-o", target],
        ["gold", "export", "--db", str(db), "-o", target],
        ["fit", "--db", str(db), "-o", target],
    ]


def test_every_output_option_refuses_the_store_and_its_side_files(db: Path, tmp_path: Path
                                                                  ) -> None:
    before = counts(db)
    size = db.stat().st_size
    link = tmp_path / "link.db"
    link.symlink_to(db)
    os.chdir(tmp_path)  # a relative path to the store
    targets = [str(db), f"{db}-wal", f"{db}-shm", str(link), db.name,
               str(tmp_path / "sub" / ".." / db.name)]
    for target in targets:
        for args in writing_commands(db, target):
            result = invoke(*args)
            assert result.exit_code == USAGE, (args, result.output)  # type: ignore[attr-defined]
            assert "would destroy" in result.output  # type: ignore[attr-defined]
    assert counts(db) == before and db.stat().st_size == size


def test_reports_refuse_the_store_and_their_inputs(db: Path, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("", encoding="utf-8")
    for args in (["calibrate", "--db", str(db), "--gold", str(gold), "--html", str(db)],
                 ["calibrate", "--db", str(db), "--gold", str(gold), "--html", str(gold)],
                 ["eval-gold", str(gold), "--db", str(db), "--output-json", str(gold)],
                 ["drift", "--db", str(db), "--from", "a", "--to", "b", "--html", f"{db}-wal"],
                 ["fit", "--db", str(db), "--gold", str(gold), "-o", str(gold)]):
        result = invoke(*args)
        assert result.exit_code == USAGE, (args, result.output)  # type: ignore[attr-defined]
    assert gold.read_text(encoding="utf-8") == ""


def test_ragas_import_refuses_the_store_and_its_input(db: Path, tmp_path: Path) -> None:
    src = tmp_path / "ragas.jsonl"
    text = json.dumps({"user_input": "q?", "response": "r.", "retrieved_contexts": ["c"]}) + "\n"
    src.write_text(text, encoding="utf-8")
    before = counts(db)
    for target in (str(db), str(src)):
        result = invoke("import", str(src), "--format", "ragas", "--db", str(db), "-o", target)
        assert result.exit_code == USAGE, result.output  # type: ignore[attr-defined]
    assert counts(db) == before and src.read_text(encoding="utf-8") == text
    ok = invoke("import", str(src), "--format", "ragas", "--db", str(db),
                "-o", str(tmp_path / "records.jsonl"))
    assert ok.exit_code == 0, ok.output  # type: ignore[attr-defined]


def test_exports_still_write_where_they_may(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "queue.jsonl"
    result = invoke("queue", "export", "--db", str(db), "-o", str(target))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert target.read_text(encoding="utf-8").count("\n") > 0
    assert [p.name for p in target.parent.iterdir()] == ["queue.jsonl"]  # no temp file left


def test_an_interrupted_write_leaves_the_earlier_file(tmp_path: Path) -> None:
    target = tmp_path / "report.jsonl"
    target.write_text("good\n", encoding="utf-8")

    def chunks() -> Iterator[str]:
        yield "half"
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError), atomic_text(target) as fh:
        fh.writelines(chunks())
    assert target.read_text(encoding="utf-8") == "good\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.jsonl"]


def test_the_library_export_refuses_the_store(db: Path) -> None:
    from judge import api

    with pytest.raises(OutputError, match="would destroy"):
        api.export(db, "jsonl", db=db)
    with pytest.raises(OutputError, match="input file"):
        check_output(db.parent / "x" / ".." / "in.jsonl", inputs=[db.parent / "in.jsonl"])
    assert counts(db)[0] > 0
