"""research/paired_reports.py: B minus A in balanced accuracy from two reports' misjudged
lists, with a bootstrap that keeps a source's items together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from research.paired_reports import compare, main


def _gold() -> list[dict[str, Any]]:
    """40 items, two labels, two items per source."""
    return [{"id": f"g{i}", "label": "supported" if i % 2 else "contradicted",
             "sources": [{"id": f"s{i // 2}", "text": "t"}]} for i in range(40)]


def _report(wrong: list[str], version: str) -> dict[str, Any]:
    return {"judge_version": version, "n": 40, "misjudged": [{"gold_id": g} for g in wrong]}


def test_the_difference_is_the_balanced_accuracies_and_its_interval_holds_it() -> None:
    gold = _gold()
    # A misses 8 contradicted items (g0, g2, ..., g14) and 2 supported; B misses 2 supported
    a = _report([f"g{i}" for i in range(0, 16, 2)] + ["g1", "g3"], "A")
    b = _report(["g1", "g3"], "B")
    out = compare(a, b, gold, draws=500)
    assert out["balanced_accuracy_a"] == pytest.approx((12 / 20 + 18 / 20) / 2)
    assert out["balanced_accuracy_b"] == pytest.approx((20 / 20 + 18 / 20) / 2)
    diff, low, high = out["difference"]
    assert diff == pytest.approx(0.2)
    assert 0 < low <= diff <= high  # B is never worse on any resample: only A misses more
    assert out["sources"] == 20


def test_identical_reports_differ_by_nothing() -> None:
    gold = _gold()
    same = _report(["g0", "g5", "g9"], "A")
    assert compare(same, same, gold, draws=200)["difference"] == [0.0, 0.0, 0.0]


def test_a_report_of_another_gold_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(g) for g in _gold()[:30]) + "\n", encoding="utf-8")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_report([], "A")), encoding="utf-8")
    b.write_text(json.dumps(_report([], "B")), encoding="utf-8")
    assert main([str(a), str(b), "--gold", str(gold)]) == 1
    assert "judged 40 items, the gold holds 30" in capsys.readouterr().err
