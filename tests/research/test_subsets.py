"""The research subsets (tuning, check) are reproducible and drawn from the right split."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from judge.evaluation.gold import load_gold

ROOT = Path(__file__).resolve().parents[2]


def test_the_eval_subset_is_reproducible_and_balanced() -> None:

    proc = subprocess.run([sys.executable, str(ROOT / "research/make_subset.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((ROOT / "gold/eval_subset.manifest.json").read_text())
    splits = json.loads((ROOT / "gold/splits.json").read_text())
    subset = load_gold(ROOT / "gold/eval_subset.jsonl").items
    assert len(subset) == manifest["total"]
    for i in subset:  # drawn from the check part only
        assert i.id in splits["datasets"][i.dataset]["check"]
    for dataset, info in manifest["datasets"].items():
        chosen = [v["chosen"] for v in info["labels"].values()]
        assert max(chosen) - min(chosen) <= 1, dataset
        assert not set(splits["datasets"][dataset]["check"]) & \
            set(splits["datasets"][dataset]["tuning"])


def test_the_tuning_subset_is_reproducible_and_never_touches_the_check_part() -> None:

    proc = subprocess.run([sys.executable, str(ROOT / "research/make_tuning.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    splits = json.loads((ROOT / "gold/splits.json").read_text())
    items = load_gold(ROOT / "research/tuning_subset.jsonl").items
    ids = [i.id for i in items]
    assert len(ids) == len(set(ids))  # the second round never repeats the first
    for i in items:
        assert i.id in splits["datasets"][i.dataset]["tuning"]


def test_the_tuning_subset_holds_the_whole_tuning_part() -> None:
    splits = json.loads((ROOT / "gold/splits.json").read_text())
    ids = {i.id for i in load_gold(ROOT / "research/tuning_subset.jsonl").items}
    assert ids == {i for d in splits["datasets"].values() for i in d["tuning"]}
