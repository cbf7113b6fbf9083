"""The research notes' judge-version history is generated from the reports, never typed by
hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from research.history import history_table, main
from research.quality_block import BlockError as EvaluationError

ROOT = Path(__file__).resolve().parents[2]


def report(path: Path, version: str, bal: float, **extra: object) -> str:
    path.write_text(json.dumps({
        "judge_version": f"m@{version}", "balanced_accuracy": bal,
        "lenient_rate": {"value": 0.2}, "queue_recall": 0.9, "queue_load": 0.7, **extra}))
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
    assert "claim subset of `make eval` (" not in table  # no version measured on the largest subset
    entry["check_large"] = report(tmp_path / "other.json", "bbb", 0.6)
    manifest.write_text(json.dumps({"versions": [entry]}))
    with pytest.raises(EvaluationError, match="not of aaa"):
        history_table(manifest)


def test_research_notes_history_is_what_the_generator_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed = ROOT / "research" / "README.md"
    notes = tmp_path / "README.md"
    shutil.copy(committed, notes)
    monkeypatch.chdir(ROOT)  # the default manifest path, as `make eval` runs it
    assert main(["--readme", str(notes)]) == 0
    assert notes.read_text() == committed.read_text()
    assert "<!-- history:start -->" not in (ROOT / "README.md").read_text()


def test_versions_measured_on_the_largest_subset_get_a_table_with_intervals(
    tmp_path: Path
) -> None:
    manifest = tmp_path / "history.json"
    per_label = {"contradicted": {"recall": {"value": 0.4, "ci_low": 0.27, "ci_high": 0.54,
                                             "n": 50}},
                 "not_verifiable": {"recall": None}}
    xl = report(tmp_path / "x.json", "aaa", 0.55, n=358, per_label=per_label,
                balanced_accuracy_ci={"ci_low": 0.5, "ci_high": 0.6})
    entries = [
        {"version": "aaa", "change": "first", "adopted": "yes", "check_xl": xl,
         "check_subset": report(tmp_path / "s.json", "aaa", 0.5),
         "check_large": report(tmp_path / "l.json", "aaa", 0.525)},
        {"version": "bbb", "change": "second", "adopted": "no",
         "check_subset": report(tmp_path / "s2.json", "bbb", 0.5),
         "check_large": report(tmp_path / "l2.json", "bbb", 0.525)},
    ]
    manifest.write_text(json.dumps({"versions": entries}))
    table = history_table(manifest)
    assert "358-claim subset of `make eval` (" in table
    assert "| `aaa` | 55.0% (50%–60%) | 40% (n=50) | – | 20.0% | 90.0% / 70.0% | yes |" in table
    assert table.count("| `bbb` |") == 1  # only in the first table
