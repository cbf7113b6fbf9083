"""The Chinese gold drawn from OCNLI (research/make_ocnli.py): reproducible from the external
file, split by premise, and a Traditional copy that changes the text's script and nothing
else a stored verdict refers to (ids, groups, source ids, labels)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = {"check": ROOT / "gold" / "ocnli_check", "tuning": ROOT / "research" / "ocnli_tuning",
         "confirm": ROOT / "gold" / "ocnli_confirm"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_draws_are_what_the_script_writes() -> None:
    pytest.importorskip("opencc")
    proc = subprocess.run([sys.executable, str(ROOT / "research" / "make_ocnli.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_no_premise_sits_on_both_sides_and_labels_are_balanced() -> None:
    groups = {part: {r["id"].split(":")[1] for r in rows(base.with_suffix(".jsonl"))}
              for part, base in FILES.items()}
    assert all(groups.values())
    assert not groups["check"] & groups["tuning"]
    # the confirming draw shares a premise with neither earlier draw
    assert not groups["confirm"] & (groups["check"] | groups["tuning"])
    for part, base in FILES.items():
        labels = [r["label"] for r in rows(base.with_suffix(".jsonl"))]
        counts = {labels.count(k) for k in ("supported", "contradicted", "not_in_source")}
        assert len(counts) == 1 and (part == "confirm" or counts == {100})


def test_the_confirming_draw_is_from_the_check_part() -> None:
    sys.path.insert(0, str(ROOT / "research"))
    from make_subset import part_of

    confirm = rows(FILES["confirm"].with_suffix(".jsonl"))
    check_ids = {r["id"] for r in rows(FILES["check"].with_suffix(".jsonl"))}
    assert len(confirm) == 405  # the check part's rarest label outside the check draw: 135
    assert all(part_of("ocnli", r["id"].split(":")[1]) == "check" for r in confirm)
    assert not {r["id"] for r in confirm} & check_ids


def test_the_traditional_copy_changes_the_script_only() -> None:
    opencc = pytest.importorskip("opencc")
    to_simplified = opencc.OpenCC("tw2sp")
    for base in FILES.values():
        simplified = rows(base.with_suffix(".jsonl"))
        traditional = rows(base.with_suffix(".zh-tw.jsonl"))
        assert len(simplified) == len(traditional)
        changed = back = 0
        for s, t in zip(simplified, traditional, strict=True):
            assert t["id"] == s["id"].replace("ocnli:", "ocnli_tw:", 1)
            assert t["dataset"] == "ocnli_tw" and s["dataset"] == "ocnli"
            assert [x["id"] for x in t["sources"]] == [x["id"] for x in s["sources"]]
            assert (t["label"], t["original_label"], t["annotator"]) == (
                s["label"], s["original_label"], s["annotator"])
            assert t["claim"] == t["answer"]
            changed += t["sources"][0]["text"] != s["sources"][0]["text"]
            # back to Simplified, the hypothesis is nearly always the original again
            back += to_simplified.convert(t["claim"]) == s["claim"]
        assert changed > 0.8 * len(simplified)  # Simplified and Traditional differ
        assert back > 0.8 * len(simplified)
