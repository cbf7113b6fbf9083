"""``judge doctor`` checks what a run will do (the strategy's prompts, the settings it reads,
a probe head), and ``judge run`` / ``judge eval-gold`` refuse the same problems before anything
is stored (exit 64); ``doctor --online`` sends one cheap authenticated request, and a refused
key reads as "the provider refused OPENAI_API_KEY (401)" with the fix, in doctor and in a run.
The scripted fake provider stands in for the network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import litellm
import pytest
from typer.testing import CliRunner

from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.plan import plan_findings
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM, install, rule_responder

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "gold" / "eval_all.jsonl"
RECORD = {"id": "a", "answer": "401 means unauthenticated [S1].", "generator": "rag-bot",
          "sources": [{"id": "S1", "text": "401 means unauthenticated."}]}


def invoke(*args: str) -> Any:
    _register()
    return CliRunner().invoke(app, list(args))


def config_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "judge.toml"
    path.write_text(f'[judge]\nmodel = "{FAKE_MODEL}"\n{body}', encoding="utf-8")
    return path


def test_doctor_refuses_scores_without_its_prompt_and_runs_stop_before_storing(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    config = config_file(tmp_path, 'strategy = "scores"\n')
    db = tmp_path / "j.db"
    doctor = invoke("doctor", "--config", str(config), "--db", str(db))
    assert doctor.exit_code == 64, doctor.output
    out = " ".join(doctor.output.split())
    assert "all good" not in out
    assert "strategy 'scores' asks prompt 'choose_label', and the config pins no version" in out
    # the fix pins only what the strategy asks
    assert 'prompts = {split_claims = "v2", choose_label = "v3"}' in out
    answers = write_jsonl(tmp_path / "in.jsonl", [RECORD])
    for command in (["run", str(answers)], ["eval-gold", str(GOLD), "--limit", "2"]):
        result = invoke(*command, "--config", str(config), "--db", str(db))
        assert result.exit_code == 64, result.output
        assert "choose_label" in result.output and "nothing was stored" in result.output
        assert not db.exists()
    assert fake_llm.calls == []
    fixed = config_file(tmp_path, 'strategy = "scores"\n'
                                  'prompts = {split_claims = "v2", choose_label = "v3"}\n')
    again = invoke("doctor", "--config", str(fixed), "--db", str(db))
    assert again.exit_code == 0, again.output
    assert "split_claims/v2, choose_label/v3 compile" in again.output


@pytest.mark.parametrize(("body", "said"), [
    ('label_bias = { supported = -0.5 }\n',
     "label_bias is set, but strategy 'batch' does not read it (read by 'scores')"),
    ('strategy = "scores"\n'
     'prompts = {split_claims = "v2", choose_label = "v3", verify_claims = "v2"}\n',
     "the config pins verify_claims, which strategy 'scores' does not ask"),
    ('prompts = {split_claims = "v2", verify_claims = "v9"}\n',
     "prompt template verify_claims/v9 not found"),
])
def test_a_setting_the_strategy_does_not_read_or_a_missing_template_is_refused(
        tmp_path: Path, body: str, said: str) -> None:
    config = JudgeConfig.load(config_file(tmp_path, body))
    problems = [f for f in plan_findings(config) if not f.ok]
    assert [said in f.found for f in problems] == [True], problems
    assert problems[0].exit_code == 64 and problems[0].fix


def test_every_config_in_the_repository_passes_the_plan() -> None:
    # the embedded default (probe: its pinned head and its packaged operating point) and the
    # research configs
    paths = [None, *sorted((ROOT / "research" / "configs").glob("*.toml"))]
    for path in paths:
        config = JudgeConfig.load(path)
        findings = plan_findings(config)
        assert [f for f in findings if not f.ok] == [], path
    heads = [f.found for f in plan_findings(JudgeConfig.load(None)) if f.name == "head"]
    assert len(heads) == 1 and "matches the config" in heads[0]
    assert "operating point qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v8.json" in heads[0]
    assert "(claims read as zh: head 'qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v7')" in heads[0]


def refusing(schema: str, messages: list[dict[str, Any]]) -> Any:
    return litellm.AuthenticationError(message="Incorrect API key provided: sk-...abcd",
                                       llm_provider="openai", model="gpt-4.1-mini")


def test_doctor_online_says_which_key_the_provider_refused(tmp_path: Path) -> None:
    install(FakeLLM(responder=refusing))
    try:
        config = config_file(tmp_path, "")
        offline = invoke("doctor", "--config", str(config), "--db", str(tmp_path / "j.db"))
        assert offline.exit_code == 0, offline.output  # no request without --online
        result = invoke("doctor", "--config", str(config), "--db", str(tmp_path / "j.db"),
                        "--online")
        out = " ".join(result.output.split())
        assert result.exit_code == 64, result.output
        assert "the provider refused OPENAI_API_KEY (401)" in out
        assert "set OPENAI_API_KEY to a valid key" in out
        assert "InstructorRetryException" not in out and "sk-" not in out
        install(FakeLLM(responder=rule_responder))
        accepted = invoke("doctor", "--config", str(config), "--db", str(tmp_path / "j.db"),
                          "--online")
        assert accepted.exit_code == 0, accepted.output
        assert "the provider accepted the key" in accepted.output
    finally:
        install(FakeLLM(responder=rule_responder))


def test_a_run_whose_key_is_refused_says_so(tmp_path: Path) -> None:
    fake = install(FakeLLM(responder=refusing))
    try:
        answers = write_jsonl(tmp_path / "in.jsonl", [RECORD])
        result = invoke("run", str(answers), "--config", str(config_file(tmp_path, "")),
                        "--db", str(tmp_path / "j.db"))
        out = " ".join(result.output.split())
        assert result.exit_code == 64, result.output
        assert "the provider refused OPENAI_API_KEY (401): set OPENAI_API_KEY to a valid" in out
        assert "InstructorRetryException" not in out
        assert len(fake.calls) == 1  # the first call, not tried again
    finally:
        install(FakeLLM(responder=rule_responder))
