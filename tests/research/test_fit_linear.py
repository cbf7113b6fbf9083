"""research/fit_linear.py: a thin caller of judge.fitting; it fits what ``judge fit
--holdout 0`` fits, on the first N gold items when asked, with the features it is given."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from judge.api import eval_gold, fit
from judge.config import JudgeConfig
from judge.config.score_model import CORE_FEATURES, FEATURES
from tests.fakes import FakeLLM
from tests.fit.synthetic import gold_items, install_letters, letters_for, scores_config, write_gold


def _fit_module() -> Any:
    research = Path(__file__).resolve().parents[2] / "research"
    sys.path.insert(0, str(research))
    spec = importlib.util.spec_from_file_location("fit_linear", research / "fit_linear.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["fit_linear"] = module
    spec.loader.exec_module(module)
    return module


def test_the_research_fit_is_judge_fits_fit(tmp_path: Path, fake_llm: FakeLLM) -> None:
    items = gold_items(60)
    install_letters(fake_llm, letters_for(items))
    gold = write_gold(tmp_path / "gold.jsonl", items)
    db = tmp_path / "judge.db"
    version = eval_gold(gold, config=scores_config(), db=db).summary.judge_version
    report, toml = tmp_path / "report.json", tmp_path / "fitted.toml"
    assert _fit_module().main(["--db", str(db), "--version", version, "--gold", str(gold),
                               "--first", "48", "--text-features", "--output", str(report),
                               "--toml", str(toml)]) == 0
    data = json.loads(report.read_text())
    assert data["n"] == 48 and data["features"] == list(FEATURES) and data["model_calls"] == 0
    # judge fit on the same 48 items, nothing held out, from a rule weighing every feature
    write_gold(tmp_path / "first.jsonl", items[:48])
    same = fit(tmp_path / "first.jsonl", db=db, holdout=0, judge_version=version)
    assert data["score_model"] == same.fitted.model.model_dump()
    assert data["review_support_below"] == same.fitted.review_support_below
    assert JudgeConfig.load(toml).versioned_fields() == same.candidate.versioned_fields()
    # without --text-features the rule weighs the core features only
    assert _fit_module().main(["--db", str(db), "--version", version, "--gold", str(gold),
                               "--output", str(report)]) == 0
    assert set(json.loads(report.read_text())["score_model"]["weights"]["supported"]) == set(
        CORE_FEATURES)
