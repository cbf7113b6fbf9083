"""A model that cannot load stops the run before anything is stored: the real ``judge run``
in a subprocess with a missing, non-GGUF, truncated or unloadable ``$CLAIM_JUDGE_GGUF``, an
unwritable cache folder, the real packaged model edited in place in its cache, or its cut
(``probe_layers``) edited with its marker rewritten, exits 64 with the cause and the fix, and
the store holds no answer."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from judge.models import embedded, model_bytes
from tests.faults.harness import env, write_records
from tests.models.test_gguf_layers import toy_gguf
from tests.models.test_model_bytes import flip


def run(work: Path, settings: str = "", timeout: float = 300, **environ: str
        ) -> tuple[int, str]:
    write_records(work / "in.jsonl")
    (work / "judge.toml").write_text(
        f'[judge]\nmodel = "{embedded.EMBEDDED_MODEL}"\n{settings}', encoding="utf-8")
    variables = {k: v for k, v in env().items() if k != embedded.ENV_GGUF}
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "run", "in.jsonl", "--db", "judge.db", "--json"],
        cwd=work, env={**variables, "COLUMNS": "4000", **environ}, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def stored_answers(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master")}
        return conn.execute("select count(*) from answers").fetchone()[0] if (
            "answers" in tables) else 0


def gguf(kind: str, path: Path) -> Path:
    if kind == "missing":
        return path
    if kind == "not_gguf":
        path.write_text("this is a README, not a model\n", encoding="utf-8")
    elif kind == "truncated":
        toy_gguf(path)
        path.write_bytes(path.read_bytes()[:-5])
    elif kind == "empty":
        path.write_bytes(b"")
    return path


@pytest.mark.parametrize(("kind", "cause"), [
    ("missing", "is not a file"),
    ("not_gguf", "not a GGUF file"),
    ("truncated", "truncated GGUF"),
    ("empty", "truncated GGUF"),
])
def test_a_gguf_that_cannot_load_is_a_usage_error_before_anything_is_stored(
    tmp_path: Path, kind: str, cause: str
) -> None:
    own = gguf(kind, tmp_path / "own.gguf")
    code, out = run(tmp_path, CLAIM_JUDGE_GGUF=str(own), CLAIM_JUDGE_CACHE=str(tmp_path / "c"))
    assert code == 64, out[-2000:]
    assert cause in out and "CLAIM_JUDGE_GGUF" in out and "unset it" in out, out
    assert "Traceback" not in out
    assert stored_answers(tmp_path / "judge.db") == 0


def test_a_gguf_the_runtime_cannot_load_is_a_usage_error_before_anything_is_stored(
    tmp_path: Path
) -> None:
    pytest.importorskip("xllamacpp")
    own = tmp_path / "toy.gguf"
    toy_gguf(own)  # a whole GGUF of an architecture llama.cpp does not know
    code, out = run(tmp_path, 'strategy = "batch"\n', CLAIM_JUDGE_GGUF=str(own),
                    CLAIM_JUDGE_CACHE=str(tmp_path / "c"))
    assert code == 64, out[-2000:]
    assert "cannot be loaded" in out and "xllamacpp could not load" in out
    assert "Traceback" not in out
    assert stored_answers(tmp_path / "judge.db") == 0


@pytest.mark.parametrize(("variable", "value", "cause"), [
    ("CLAIM_JUDGE_SLOTS", "0", "must be positive"),
    ("CLAIM_JUDGE_SLOTS", "9", "is more than 8 slots"),
    ("CLAIM_JUDGE_THREADS", "two", "is not an integer"),
    ("CLAIM_JUDGE_N_CTX", "-1", "must be positive"),
])
def test_a_runtime_setting_the_runtime_would_refuse_is_a_usage_error_before_anything_is_stored(
    tmp_path: Path, variable: str, value: str, cause: str
) -> None:
    code, out = run(tmp_path, **{variable: value})
    assert code == 64, out[-2000:]
    assert f"{variable}={value!r} {cause}" in out and "unset it" in out, out
    assert stored_answers(tmp_path / "judge.db") == 0


def test_an_unwritable_cache_folder_is_a_usage_error_that_names_the_variable(
    tmp_path: Path
) -> None:
    if embedded.unavailable() is not None:
        pytest.skip("the embedded extra is not installed")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    code, out = run(tmp_path, CLAIM_JUDGE_CACHE=str(blocker / "models"))
    assert code == 64, out[-2000:]
    assert "cannot write the model file" in out and "CLAIM_JUDGE_CACHE" in out
    assert stored_answers(tmp_path / "judge.db") == 0


@pytest.mark.embedded
def test_the_real_model_edited_in_its_cache_is_refused_naming_the_file(tmp_path: Path) -> None:
    real = embedded.model_file()
    cache = tmp_path / "cache"
    cache.mkdir()
    copy = cache / real.name
    shutil.copyfile(real, copy)
    shutil.copyfile(real.with_name(real.name + ".sha256"), cache / (real.name + ".sha256"))
    flip(copy, os.path.getsize(copy) // 2)  # one byte, size and marker kept
    code, out = run(tmp_path, CLAIM_JUDGE_CACHE=str(cache))
    assert code == 64, out[-2000:]
    assert str(copy) in out and "delete it" in out and "re-assembled" in out
    assert stored_answers(tmp_path / "judge.db") == 0


@pytest.mark.embedded
def test_the_real_cut_edited_with_its_marker_rewritten_is_refused_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial of issue 52: 64 bits flipped in the cut the default config reads
    (``probe_layers = 21``) and its ``.sha256`` rewritten to match. The cut is checked against
    the sha256 the package pins, not the marker: refused before anything is stored, and
    deleted (the next run cuts it again)."""
    real = embedded.model_file()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / real.name).symlink_to(real)  # the verified model, not copied
    shutil.copyfile(model_bytes.marker_path(real), model_bytes.marker_path(cache / real.name))
    monkeypatch.setenv(embedded.ENV_CACHE, str(cache))
    cut = embedded.layered_file(21)  # cut here, and checked against the pinned sha256
    assert model_bytes.digest(cut) == embedded.CUT_SHA256[21]
    middle = cut.stat().st_size // 2
    for at in range(8):  # 64 bits, in the middle of the blocks' weights
        flip(cut, middle + at)
    model_bytes.write_marker(cut, model_bytes.sha256_file(cut))
    # hashing both files (2 GB) takes minutes on a busy machine
    code, out = run(tmp_path, timeout=1200, CLAIM_JUDGE_CACHE=str(cache))
    assert code == 64, out[-2000:]
    assert str(cut) in out and "not the cut of the verified model" in out and "run again" in out
    assert stored_answers(tmp_path / "judge.db") == 0
    assert not cut.exists() and not model_bytes.marker_path(cut).exists()


TRACEBACK = ('model crashed\nTraceback (most recent call last):\n  File "/srv/llm/app.py", '
             'line 12, in handle\n    run(request)\n  File "/srv/llm/model.py", line 40, in '
             'run\n    raise RuntimeError("out of memory")\nRuntimeError: out of memory')


def test_no_traceback_is_ever_stored_in_a_verdict(tmp_path: Path) -> None:
    from judge.api import judge_file
    from judge.config import JudgeConfig
    from judge.store import Store
    from tests.support.openai_server import OpenAIServer

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.fault("status", status=500, content=TRACEBACK, times=0, only="verify")
        config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url,
                             strategy="batch", retries=0, timeout_s=10)
        judge_file(write_records(tmp_path / "in.jsonl"), config=config, db=tmp_path / "j.db")
    store = Store.open(tmp_path / "j.db")
    rows = list(store.verdict_rows())
    calls = [c["error"] for c in store.rows("select error from calls where error is not null")]
    store.close()
    errors = [r["error"] for r in rows if r["label"] == "judge_error"]
    assert errors and all("out of memory" in e for e in errors)  # the cause is kept
    assert not any("Traceback" in e or 'File "' in e for e in errors), errors
    assert any("Traceback" in c for c in calls)  # the call row keeps the provider's whole error
