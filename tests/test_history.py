"""The README's judge-version history is generated from the reports, never typed by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from judge.evaluation import EvaluationError
from judge.history import history_table, main

ROOT = Path(__file__).resolve().parents[1]


def report(path: Path, version: str, bal: float) -> str:
    path.write_text(json.dumps({
        "judge_version": f"m@{version}", "balanced_accuracy": bal,
        "lenient_rate": {"value": 0.2}, "queue_recall": 0.9, "queue_load": 0.7}))
    return path.name


def test_table_comes_from_the_reports_and_refuses_a_report_of_another_version(
    tmp_path: Path
) -> None:
    manifest = tmp_path / "history.json"
    entry = {"version": "aaa", "change": "first", "adopted": "yes",
             "check_subset": report(tmp_path / "s.json", "aaa", 0.5),
             "check_large": report(tmp_path / "l.json", "aaa", 0.525)}
    manifest.write_text(json.dumps({"versions": [entry]}))
    table = history_table(manifest)
    assert "| `aaa` | first | 50.0% / 52.5% | 20.0% | 90.0% / 70.0% | yes |" in table
    entry["check_large"] = report(tmp_path / "other.json", "bbb", 0.6)
    manifest.write_text(json.dumps({"versions": [entry]}))
    with pytest.raises(EvaluationError, match="not of aaa"):
        history_table(manifest)


def test_readme_history_is_what_the_generator_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    monkeypatch.chdir(ROOT)  # the default manifest path, as `make eval` runs it
    assert main(["--readme", str(readme)]) == 0
    assert readme.read_text() == (ROOT / "README.md").read_text()
