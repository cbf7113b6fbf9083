"""The first day: `judge init` in an empty folder gives something to judge (no sample refused as
self-grading), `judge run` stops before storing anything when the setup cannot work (no key:
exit 64 naming the variable; nothing at api_base: exit 1 naming the address; the first call
refused: exit 64, not a store of judge_error verdicts), and `judge doctor` / `judge models`
report each of these. The real CLI in a subprocess, a real OpenAI-compatible server on
127.0.0.1 as the provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.models.identity import self_grading_reason
from judge.quickstart import GENERATORS, QUICKSTART_MODEL, sample_records
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


@pytest.fixture()
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def judge(cwd: Path, *args: str, key: str | None = "sk-test",
          base: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_API_BASE", "CLAIM_JUDGE_CONFIG",
                        "CLAIM_JUDGE_DB")}
    env.update({"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80"})
    if key is not None:
        env["OPENAI_API_KEY"] = key
    if base is not None:
        env["OPENAI_API_BASE"] = base
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("model", [QUICKSTART_MODEL, "anthropic/claude-sonnet-4-5",
                                   "gemini/gemini-2.5-pro", "ollama/qwen2.5:14b",
                                   "mistral/mistral-large-latest"])
def test_no_sample_is_ever_refused_as_self_grading(model: str) -> None:
    records = sample_records(model)
    assert all(self_grading_reason(r["generator"], model) is None for r in records)
    assert len({r["generator"] for r in records}) >= 3  # different generators
    assert {r["generator"] for r in records} <= set(GENERATORS)


def test_init_then_run_judges_the_samples_with_exit_0(tmp_path: Path,
                                                      server: OpenAIServer) -> None:
    init = judge(tmp_path, "init")
    assert init.returncode == 0, init.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.jsonl", "judge.toml"]
    assert f'model = "{QUICKSTART_MODEL}"' in (tmp_path / "judge.toml").read_text()
    # the README's command; the provider's endpoint comes from the environment, as a user's
    # OPENAI_API_BASE would give it
    run = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db", "--json",
                base=server.base_url)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["answers"] == 4 and summary["refused_answers"] == []
    assert summary["claims"] >= 6 and summary["judge_errors"] == 0
    assert summary["labels"]["supported"] >= 2 and summary["flagged"] >= 1
    again = judge(tmp_path, "init")  # a second init keeps what is there
    assert again.returncode == 0 and "kept" in again.stderr


def test_without_a_key_run_stops_before_storing_and_names_the_variable(
        tmp_path: Path) -> None:
    judge(tmp_path, "init")
    run = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db", key=None)
    assert run.returncode == 64, run.stderr
    assert "OPENAI_API_KEY is not set" in run.stderr
    assert "export OPENAI_API_KEY=" in run.stderr
    assert not (tmp_path / "judge.db").exists()
    doctor = judge(tmp_path, "doctor", key=None)
    assert doctor.returncode == 64
    assert "OPENAI_API_KEY is not set" in doctor.stdout


def test_with_a_dead_api_base_run_stops_before_storing_and_names_the_address(
        tmp_path: Path) -> None:
    judge(tmp_path, "init", "--api-base", DEAD)
    run = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db")
    assert run.returncode == 1, run.stderr
    # one line: the message is not hard-wrapped in a pipe
    line = next(x for x in run.stderr.splitlines() if x.startswith("error:"))
    assert f"nothing answers at {DEAD}" in line and "correct api_base" in line
    assert not (tmp_path / "judge.db").exists()
    doctor = judge(tmp_path, "doctor", "--json")
    assert doctor.returncode == 1
    found = {f["name"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert not found["endpoint"]["ok"] and DEAD in found["endpoint"]["found"]
    assert found["key"]["ok"] and found["config"]["ok"]


def test_doctor_and_models_report_a_working_setup(tmp_path: Path,
                                                  server: OpenAIServer) -> None:
    judge(tmp_path, "init", "--api-base", server.base_url)
    doctor = judge(tmp_path, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    for seen in ("judge.toml is valid", f"model {QUICKSTART_MODEL}", "OPENAI_API_KEY",
                 f"endpoint {server.base_url} answers", "all good"):
        assert seen in doctor.stdout, seen
    models = judge(tmp_path, "models", "--json")
    assert models.returncode == 0
    shown = json.loads(models.stdout)
    assert shown["model"] == QUICKSTART_MODEL and shown["provider"] == "openai"
    assert shown["key_variables"] == ["OPENAI_API_KEY"] and shown["missing_keys"] == []
    assert shown["endpoint"] == server.base_url
    assert shown["judge_version"].startswith("gpt-4.1-mini@")
    unset = json.loads(judge(tmp_path, "models", "--json", key=None).stdout)
    assert unset["missing_keys"] == ["OPENAI_API_KEY"]


def test_a_refused_key_on_the_first_call_stops_the_run_with_exit_64(
        tmp_path: Path, server: OpenAIServer) -> None:
    judge(tmp_path, "init", "--api-base", server.base_url)
    server.fault("status", status=401, times=0)
    run = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db", "--json")
    assert run.returncode == 64, run.stderr
    summary = json.loads(run.stdout)
    assert summary["claims"] == 0 and summary["judge_errors"] == 0  # no judge_error stored
    assert "trying again will not help" in summary["stopped"]
    assert len(server.calls()) == 1  # one request, no retries of a refused key
    server.clear()
    resumed = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["judge_errors"] == 0


def test_an_embedded_model_named_without_its_gguf_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text('[judge]\nmodel = "embedded/my-model-q4"\n'
                                         'strategy = "batch"\n', encoding="utf-8")
    (tmp_path / "gold.jsonl").write_text("", encoding="utf-8")
    env_gguf = os.environ.pop("CLAIM_JUDGE_GGUF", None)
    try:
        run = judge(tmp_path, "eval-gold", "gold.jsonl", "--db", "e.db")
    finally:
        if env_gguf is not None:
            os.environ["CLAIM_JUDGE_GGUF"] = env_gguf
    assert run.returncode == 64, run.stderr
    assert "CLAIM_JUDGE_GGUF is not set" in run.stderr
    assert not (tmp_path / "e.db").exists()


def test_api_base_is_an_option_of_run_and_eval_gold_too(tmp_path: Path,
                                                        server: OpenAIServer) -> None:
    judge(tmp_path, "init", "--api-base", DEAD)  # the config names a dead server
    run = judge(tmp_path, "run", "answers.jsonl", "--db", "judge.db", "--json",
                "--api-base", server.base_url)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["answers"] == 4
    assert server.calls()  # the option's server answered, not the config's
    for command in ("run", "eval-gold", "serve"):
        shown = judge(tmp_path, command, "--help")
        assert "--api-base" in shown.stdout, command


def test_the_missing_model_hint_names_the_model_init_pins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.models.embedded import unavailable

    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # the runtime is not installed
    message = unavailable() or ""
    assert "xllamacpp" in message and f'model = "{QUICKSTART_MODEL}"' in message
