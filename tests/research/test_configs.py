"""Every research config still loads in the current ``JudgeConfig`` and pins a judge version
(its prompt templates exist): a config that stops validating is fixed or removed, not left
for a reader to trip on."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.config import JudgeConfig
from judge.version import version_of

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "research" / "configs").glob("*.toml"))


def test_there_are_research_configs() -> None:
    assert CONFIGS


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_a_research_config_loads_and_pins_a_version(path: Path) -> None:
    config = JudgeConfig.load(path)
    assert version_of(config).startswith(config.model.rpartition("/")[2] + "@")
