"""Secrets never leave (#52): a provider that echoes the key (every request header) and a URL
with credentials in its errors, against the real ``python -m judge`` in subprocesses: neither
the key nor the password is on stdout, on stderr or anywhere in the store's bytes (the
database, its WAL); an ``api_base`` holding ``user:pass@`` fails without showing it; and
``judge doctor`` / ``judge models`` show an ``api_base`` with its credentials masked."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from judge.masking import mask, remember_secrets
from tests.faults.harness import env, judge_cmd, write_config, write_records
from tests.support.openai_server import OpenAIServer

KEY = "sk-echoed-4f9a1c7e2b"
PASSWORD = "hunter2-pw-77"
QUERY_KEY = "qk-31415926"


def _launch(commands: list[tuple[list[str], Path]]) -> list[subprocess.CompletedProcess[str]]:
    """Run commands (argv, cwd) at once with the key in the environment; their results."""
    procs = [subprocess.Popen(argv, cwd=cwd, env={**env(), "OPENAI_API_KEY": KEY},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for argv, cwd in commands]
    done = []
    for proc, (argv, _) in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=900)
        done.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
    return done


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _launch([(argv, cwd)])[0]


def _store_bytes(work: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(work.glob("judge.db*")))


def _leaks(*texts: str | bytes) -> list[str]:
    found = []
    for secret in (KEY, PASSWORD, QUERY_KEY):
        for text in texts:
            blob = text if isinstance(text, bytes) else text.encode()
            if secret.encode() in blob:
                found.append(secret)
    return found


@pytest.fixture(scope="module")
def echoed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs against a provider echoing the request's headers (the key) and a URL with a
    password: refused on the first call (the run stops, exit 64), failing every verify call
    (judge_error verdicts, exit 3); and an ``api_base`` with ``user:pass@``, which litellm's
    client cannot use (the run stops: exit 1, endpoint unreachable)."""
    scenarios = (("refused", {"status": 401, "times": 0}, ((), ("--json",))),
                 ("failing", {"status": 400, "times": 0, "only": "verify"}, ((),)),
                 ("userinfo", None, (("--json",),)))
    servers = [OpenAIServer().start() for _ in scenarios]
    try:
        runs, works = [], []
        for (name, fault, variants), server in zip(scenarios, servers, strict=True):
            base = server.base_url
            if fault is None:
                base = f"http://bob:{PASSWORD}@127.0.0.1:{server.port}/v1"
            else:
                echo = f"echo of http://bob:{PASSWORD}@127.0.0.1:{server.port}/v1"
                server.fault("status", echo=True, content=echo, **fault)
            work = tmp_path_factory.mktemp(name)
            write_records(work / "in.jsonl")
            write_config(work / "judge.toml", base)
            works.append(work)
            # the variants one after the other (one store), the scenarios at once
            runs.append([judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c", "judge.toml",
                                   *flags) for flags in variants])
        done: list[list[subprocess.CompletedProcess[str]]] = [[] for _ in scenarios]
        for step in range(max(len(r) for r in runs)):
            todo = [(i, r[step]) for i, r in enumerate(runs) if step < len(r)]
            for (i, _), proc in zip(todo, _launch([(argv, works[i]) for i, argv in todo]),
                                    strict=True):
                done[i].append(proc)
        shown = _launch([(judge_cmd("export", "--db", "judge.db"), w) for w in works])
        return {name: (done[i], shown[i], works[i], servers[i].calls())
                for i, (name, _, _) in enumerate(scenarios)}
    finally:
        for server in servers:
            server.stop()


@pytest.mark.parametrize("name,code", [("refused", 64), ("failing", 3), ("userinfo", 1)])
def test_an_echoed_key_is_neither_printed_nor_stored(
    echoed: dict[str, Any], name: str, code: int
) -> None:
    runs, shown, work, _ = echoed[name]
    assert all(r.returncode == code for r in runs), [r.stderr[-800:] for r in runs]
    texts = [t for r in (*runs, shown) for t in (r.stdout, r.stderr)]
    assert _leaks(*texts, _store_bytes(work)) == []


@pytest.mark.parametrize("name", ["refused", "failing"])
def test_the_provider_message_is_kept_masked(echoed: dict[str, Any], name: str) -> None:
    _, _, work, _ = echoed[name]
    # the provider's message is kept, masked: the error still says what happened
    with sqlite3.connect(work / "judge.db") as conn:
        errors = [e for (e,) in conn.execute(
            "select error from calls where error is not null union all "
            "select error from call_attempts where error is not null")]
    assert errors and all("echo of http://bob:***@127.0.0.1" in e for e in errors), errors
    assert all("Bearer ***" in e for e in errors), errors


@pytest.mark.parametrize("name", ["refused", "failing"])
def test_the_echo_did_carry_the_key(echoed: dict[str, Any], name: str) -> None:
    # the provider received (and echoed, with every header) the real key: what the masking
    # hid was there
    _, _, _, requests = echoed[name]
    faulted = [r for r in requests if r["fault"] == "status"]
    assert faulted and all({k.lower(): v for k, v in r["headers"].items()}.get(
        "authorization") == f"Bearer {KEY}" for r in faulted)


def test_doctor_and_models_mask_the_credentials_of_api_base(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        base = f"http://bob:{PASSWORD}@127.0.0.1:{server.port}/v1?api-key={QUERY_KEY}"
        write_config(tmp_path / "judge.toml", base)
        runs = _launch([(judge_cmd(*args, "-c", "judge.toml"), tmp_path) for args in
                        (("doctor", "--db", "judge.db"), ("models",), ("models", "--json"))])
    assert _leaks(*(t for r in runs for t in (r.stdout, r.stderr))) == []
    assert all("bob:***@127.0.0.1" in r.stdout for r in runs), [r.stdout for r in runs]
    assert "api-key=***" in runs[1].stdout
    assert json.loads(runs[2].stdout)["endpoint"].endswith("/v1?api-key=***")


def test_an_api_key_in_the_config_is_not_echoed_by_its_error(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text(f'model = "openai/x"\napi_key = "{KEY}x"\n')
    proc = _run(judge_cmd("models", "-c", "judge.toml"), tmp_path)
    assert proc.returncode == 64 and "api_key" in proc.stderr
    assert KEY not in proc.stdout + proc.stderr
    assert "OPENAI_API_KEY" in proc.stderr  # the fix: the provider's variable


def test_mask_hides_every_spelling_of_a_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-abcdef123")
    monkeypatch.setenv("SHORT_KEY", "x")  # too short to be a key: left alone
    remember_secrets({"api_base": "https://u:pa55word@proxy.example/v1?token=tok123456"})
    text = ("key sk-ant-abcdef123; https://u:pa55word@proxy.example/v1?token=tok123456&x=1 "
            "https://other:secretpw@host/x?api_key=zz9&key=k1 Authorization: Bearer abcdefgh1 "
            "and pa55word alone, a box x")
    shown = mask(text)
    for secret in ("sk-ant-abcdef123", "pa55word", "tok123456", "secretpw", "zz9", "k1",
                   "abcdefgh1"):
        assert secret not in shown, (secret, shown)
    assert "https://u:***@proxy.example/v1?token=***&x=1" in shown
    assert "a box x" in shown
