"""research/fit_probe.py --shift-from: a head fitted on vectors read with another evidence
budget keeps head v5's language offset only when every pair the offset was learnt from reads
the same evidence at both budgets (so its vector is the same), and the heads read the same
prompt and layer; otherwise it refuses."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from judge.config import JudgeConfig
from judge.decide.probe_head import load_head
from research.fit_probe import carried_shift

ROOT = Path(__file__).resolve().parents[2]
V5 = ROOT / "judge" / "config" / "heads" / "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v5.json"
CONFIGS = ROOT / "research" / "configs"


def config_with(budget: int, **changes: object) -> JudgeConfig:
    base = JudgeConfig.load(CONFIGS / "probe_first21_context_1500.toml")
    return base.model_copy(update={"probe_excerpt_chars": budget, **changes})


def test_the_offset_is_kept_when_every_pair_reads_the_same_evidence() -> None:
    donor = load_head(str(V5), hashlib.sha256(V5.read_bytes()).hexdigest())
    assert donor.shift is not None
    kept = carried_shift(V5, config_with(1500))
    assert kept.rule == donor.shift.rule and set(kept.offsets) == {"zh"}
    assert np.array_equal(kept.offsets["zh"], donor.shift.offsets["zh"])
    assert kept.about["kept_from"]["head"] == donor.about["name"]
    assert kept.about["pairs"] == donor.shift.about["pairs"]


def test_a_budget_that_cuts_the_pairs_evidence_is_refused() -> None:
    # the longest pair source is 496 characters: at 200 its evidence is cut, so its vector
    # is another one and the offset learnt at 500 means nothing for it
    with pytest.raises(SystemExit, match="evidence read differs at 200"):
        carried_shift(V5, config_with(200))


def test_another_prompt_or_layer_is_refused() -> None:
    with pytest.raises(SystemExit, match="layers"):
        carried_shift(V5, config_with(1500, probe_layers=20))
    with pytest.raises(SystemExit, match="prompt"):
        carried_shift(V5, config_with(1500, prompts={"split_claims": "v2",
                                                     "probe_claim": "v1"}))
