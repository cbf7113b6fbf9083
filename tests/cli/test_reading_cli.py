"""The CLI for reading many claims: judge runs, queue list (claim text, ids never cut, fits
the terminal), show by claim id with support, import / export, clean help, quiet pipes, and
a start-up that imports neither scipy nor litellm."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import _register, app
from judge.review.blind import BLIND_FIELDS
from judge.review.queue import QueueOptions, build_queue, queue_items
from tests.review_helpers import known_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> str:
    store = known_store(tmp_path)
    build_queue(store, options=QueueOptions(sample_rate=0.1, double_fraction=0.0))
    store.close()
    return str(tmp_path / "known.db")


def test_import_of_the_cli_loads_no_scipy_litellm_or_store() -> None:
    code = ("import sys, judge.cli; judge.cli._register(); "
            "print(sorted(m for m in ('scipy', 'litellm', 'sqlite_utils', 'numpy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def test_help_has_one_line_summaries_no_bool_and_only_accepted_keys(runner: CliRunner) -> None:
    env = {"COLUMNS": "200"}
    top = runner.invoke(app, ["--help"], env=env).stdout
    assert "<bool>" not in top
    rows = [line for line in top.splitlines() if re.match(r"│ [a-z-]+ {2,}\S", line)]
    assert len(rows) >= 15
    for line in rows:  # each command's summary on one line, never cut mid-phrase
        assert line.rstrip(" │").endswith((".", ")")), line
    listing = runner.invoke(app, ["queue", "list", "--help"], env=env).stdout
    assert "<bool>" not in listing and "--reveal" in listing
    calibrate = runner.invoke(app, ["calibrate", "--help"], env=env).stdout
    from calibration.thresholds import THRESHOLD_KEYS
    from judge.evaluation.reports import GATE_THRESHOLDS

    keys = set(re.findall(r"[a-z_]+_(?:below|above|increase|drop)", calibrate))
    assert keys == set(THRESHOLD_KEYS["calibration"]) | set(GATE_THRESHOLDS)
    drift = runner.invoke(app, ["drift", "--help"], env=env).stdout
    assert set(re.findall(r"[a-z_]+_(?:below|above|increase|drop)", drift)) == \
        set(THRESHOLD_KEYS["drift"])
    show = runner.invoke(app, ["show", "--help"], env=env).stdout
    assert "evidence coverage" in show and "created if missing" not in show


def test_runs_and_queue_list_with_text_fitting_the_terminal(runner: CliRunner, db: str) -> None:
    runs = runner.invoke(app, ["runs", "--db", db, "--json"])
    assert runs.exit_code == 0 and json.loads(runs.stdout)[0]["claims"] == 73
    assert "run-" in runner.invoke(app, ["runs", "--db", db]).stdout
    for width in (60, 80, 140):
        shown = runner.invoke(app, ["queue", "list", "--db", db, "--limit", "0"],
                              env={"COLUMNS": str(width)})
        assert shown.exit_code == 0, shown.stdout
        lines = shown.stdout.splitlines()[2:]
        assert all(len(line) <= max(width, 90) for line in lines)
        ids = re.findall(r"q-[0-9a-f]{12}-[0-9a-f]{12}", shown.stdout)
        assert len(ids) == len(lines)  # every id whole, one per line
    wide = runner.invoke(app, ["queue", "list", "--db", db], env={"COLUMNS": "200"}).stdout
    assert "Item" in wide and "judge_flagged" not in wide and "label:" not in wide
    assert "passed" not in wide and "flagged" not in wide and "stratum" not in wide
    revealed = runner.invoke(app, ["queue", "list", "--db", db, "--reveal", "--json"])
    item = json.loads(revealed.stdout)["items"][0]
    assert {"claim", "support", "judge_label", "reasons", "stratum", "position"} <= set(item)
    blind = json.loads(runner.invoke(app, ["queue", "list", "--db", db, "--json"]).stdout)
    assert blind["items"][0]["claim"] and blind["items"][0]["number"] == 1
    for shown in blind["items"]:  # the one blind rule of the service and the exports
        assert set(shown) == {*BLIND_FIELDS, "number", "claim"}
    revealed_all = json.loads(revealed.stdout)["items"]
    assert [i["id"] for i in blind["items"]] != [i["id"] for i in revealed_all]
    refused = runner.invoke(app, ["queue", "list", "--db", db, "--stratum", "passed"])
    assert refused.exit_code == 1 and "--reveal" in refused.output


def test_show_takes_a_claim_id_and_prints_support(runner: CliRunner, db: str,
                                                  tmp_path: Path) -> None:
    from judge.store import Store

    store = Store.open(db)
    claim = next(r for r in store.verdict_rows() if r["answer_id"] == "pass-00")
    store.close()
    shown = runner.invoke(app, ["show", claim["claim_id"], "--db", db],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.stdout
    assert shown.stdout.count("claim id:") == 1 and claim["claim"] in shown.stdout
    assert "support —" in shown.stdout and "evidence coverage" in shown.stdout
    missing = runner.invoke(app, ["show", "nope", "--db", db])
    assert missing.exit_code == 1 and "no answer or claim" in missing.output


def test_export_and_import_through_the_cli(runner: CliRunner, db: str, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    done = runner.invoke(app, ["export", "--db", db, "--format", "label-studio", "-o",
                               str(tasks)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "tasks.label-config.xml").read_text().startswith("<View>")
    data = json.loads(tasks.read_text(encoding="utf-8"))
    data[0]["annotations"] = [{"result": [{"from_name": "label", "to_name": "claim",
                                           "type": "choices",
                                           "value": {"choices": ["supported"]}}],
                               "completed_by": {"email": "erin@example.org"}}]
    tasks.write_text(json.dumps(data), encoding="utf-8")
    imported = runner.invoke(app, ["import", str(tasks), "--format", "label-studio",
                                   "--db", db])
    assert imported.exit_code == 0 and "imported 1 review" in imported.stdout
    meta = tmp_path / "metadata.json"
    runner.invoke(app, ["export", "--db", db, "--format", "datasette-metadata", "-o", str(meta)])
    assert "claim_verdicts" in json.loads(meta.read_text())["databases"]["known"]["tables"]
    parquet = runner.invoke(app, ["export", "--db", db, "--format", "parquet"])
    assert parquet.exit_code == 1 and "--output" in parquet.output

    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text(json.dumps({"user_input": "q", "response": "a.",
                                 "retrieved_contexts": ["a."]}) + "\n", encoding="utf-8")
    records = runner.invoke(app, ["import", str(ragas), "--format", "ragas"])
    assert records.exit_code == 0
    assert json.loads(records.stdout)["sources"] == [{"id": "C1", "text": "a."}]


def test_export_into_a_closed_pipe_ends_quietly(db: str) -> None:
    code = "import sys; from judge.cli import main; sys.argv = ['judge', *sys.argv[1:]]; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, "export", "--db", db],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0 and err == ""


def test_serve_refuses_a_store_that_does_not_exist(runner: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = runner.invoke(app, ["serve", "--db", str(missing)],
                           env={"CLAIM_JUDGE_TOKENS": "t0ken-abcdefgh:alice"})
    assert result.exit_code == 1 and "does not exist" in " ".join(result.output.split())
    assert not missing.exists()


def test_queue_item_lines_keep_ids_whole_with_chinese_text() -> None:
    from judge.cli.queue import item_lines

    items = [{"position": 1, "id": "q-0123456789ab-00001", "stratum": "flagged",
              "state": "pending", "reasons": ["judge_flagged"], "claim": "部署前一律不需要執行資料庫遷移。" * 5}]
    [_, line] = item_lines(items, reveal=False, width=80)
    from rich.cells import cell_len

    assert "q-0123456789ab-00001" in line and cell_len(line.rstrip("\n")) <= 80
    assert line.rstrip().endswith("…")


def test_queue_items_in_reading_order(db: str) -> None:
    from judge.store import Store

    store = Store.open(db)
    items = queue_items(store, store.queue_row()["id"])
    store.close()
    assert [i["position"] for i in items] == sorted(i["position"] for i in items)
