"""A file in another tool's format is recognised by its keys: `judge run` names the import
command (exit 64, nothing stored), `judge import` with the wrong --format names the right one
(exit 64) and without --format reads the format it sees. A JSON array of records, or one
record printed over several lines, is read as records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.records import AcceptedLine, RejectedLine, read_jsonl
from judge.records.sniff import import_command, sniff_file, sniff_object

ROOT = Path(__file__).resolve().parents[2]
DEEPEVAL = ROOT / "tests" / "data" / "deepeval"
RAGAS = {"user_input": "What does 401 mean?", "retrieved_contexts": ["401: unauthenticated."],
         "response": "401 means unauthenticated.", "reference": "Unauthenticated."}
RECORD = {"id": "a01", "answer": "401 means unauthenticated [S1].",
          "sources": [{"id": "S1", "text": "401 means unauthenticated."}],
          "generator": "anthropic/claude-haiku-4-5"}
LABEL_STUDIO = {"id": 1, "data": {"claim": "x", "item_id": "i1"},
                "annotations": [{"result": [], "completed_by": 1}]}
ARGILLA = {"id": "i1", "fields": {"claim": "x"}, "responses": {}, "suggestions": {},
           "metadata": {}}


@pytest.mark.parametrize(("obj", "fmt"), [
    (RAGAS, "ragas"),
    ({"question": "q", "answer": "a", "contexts": ["c"], "ground_truth": "g"}, "ragas"),
    (json.loads((DEEPEVAL / "test_cases.jsonl").read_text().splitlines()[0]), "deepeval"),
    (LABEL_STUDIO, "label-studio"),
    (ARGILLA, "argilla"),
    (RECORD, "records"),
    ({"input": "only a question"}, None),
    ([1, 2], None),
])
def test_each_format_is_told_by_its_keys(obj: object, fmt: str | None) -> None:
    sniffed = sniff_object(obj)
    assert (sniffed.fmt if sniffed else None) == fmt


@pytest.mark.parametrize("name", ["test_cases.json", "test_cases.jsonl", "test_cases.csv",
                                  "goldens.json", "goldens.csv"])
def test_deepeval_files_of_every_shape_are_recognised(name: str) -> None:
    sniffed = sniff_file(DEEPEVAL / name)
    assert sniffed is not None and sniffed.fmt == "deepeval"
    assert import_command(sniffed, name).startswith(f"judge import {name} --format deepeval")


def test_a_json_array_and_a_record_printed_over_lines_are_read_as_records() -> None:
    array = read_jsonl(json.dumps([RECORD, {"answer": "no sources"}], indent=2).encode())
    assert isinstance(array.items[0], AcceptedLine) and array.items[0].record.id == "a01"
    assert isinstance(array.items[1], RejectedLine) and array.items[1].line == 2
    assert "sources" in array.items[1].error
    printed = read_jsonl(json.dumps(RECORD, indent=1).encode())
    assert [type(i) for i in printed.items] == [AcceptedLine]
    # JSON lines stay JSON lines, each bad line numbered with the hint
    lines = read_jsonl(json.dumps(RECORD).encode() + b"\n{broken\n")
    assert isinstance(lines.items[0], AcceptedLine)
    assert isinstance(lines.items[1], RejectedLine) and lines.items[1].line == 2
    assert "one whole JSON record on each line" in lines.items[1].error


def _judge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_run_on_a_ragas_file_names_the_import_command(tmp_path: Path) -> None:
    (tmp_path / "ragas.jsonl").write_text(json.dumps(RAGAS) + "\n", encoding="utf-8")
    run = _judge(tmp_path, "run", "ragas.jsonl", "--db", "j.db", "--model", "openai/x")
    assert run.returncode == 64, run.stderr
    assert "looks like a RAGAS dataset" in run.stderr
    assert "judge import ragas.jsonl --format ragas -o ragas.records.jsonl" in run.stderr
    assert not (tmp_path / "j.db").exists()
    (tmp_path / "tasks.json").write_text(json.dumps([LABEL_STUDIO]), encoding="utf-8")
    tasks = _judge(tmp_path, "run", "tasks.json", "--db", "j.db", "--model", "openai/x")
    assert tasks.returncode == 64
    assert "judge import tasks.json --format label-studio --db judge.db" in tasks.stderr


def test_import_with_the_wrong_format_names_the_right_one(tmp_path: Path) -> None:
    (tmp_path / "ragas.jsonl").write_text(json.dumps(RAGAS) + "\n", encoding="utf-8")
    wrong = _judge(tmp_path, "import", "ragas.jsonl", "--format", "deepeval")
    assert wrong.returncode == 64, wrong.stderr
    assert "not deepeval" in wrong.stderr and "--format ragas" in wrong.stderr
    told = _judge(tmp_path, "import", "ragas.jsonl")  # no --format: the one it sees
    assert told.returncode == 0, told.stderr
    assert json.loads(told.stdout)["sources"][0]["id"] == "C1"
    (tmp_path / "mine.jsonl").write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    mine = _judge(tmp_path, "import", "mine.jsonl", "--format", "ragas")
    assert mine.returncode == 64 and "`judge run mine.jsonl`" in mine.stderr


def test_a_peer_row_among_records_is_rejected_with_the_conversion_named() -> None:
    batch = read_jsonl((json.dumps(RECORD) + "\n" + json.dumps(RAGAS) + "\n").encode())
    rejected = batch.items[1]
    assert isinstance(rejected, RejectedLine)
    assert "sources: Field required" in rejected.error
    assert "judge import FILE --format ragas" in rejected.error
    assert "judge.read_dataset(path, 'ragas')" in rejected.error
