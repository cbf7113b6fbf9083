"""The built wheel works outside the checkout.

Builds the wheel, installs it into a fresh venv that cannot see the checkout, and judges the
sample batch from a temporary directory with only a ``judge.toml`` there (no ``-c``), against a
real OpenAI-compatible server on 127.0.0.1. The fresh venv borrows the test runner's installed
third-party packages through a ``.pth`` line naming the runner's site-packages (a directory
added that way has its own ``.pth`` files ignored, so an editable install of the checkout does
not leak in); nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAIServer

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "gold" / "samples" / "answers.jsonl"


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _runner_site_packages() -> list[str]:
    """The runner's site-packages directories (never the checkout)."""
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["platlib"],
            *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    seen: list[str] = []
    for d in dirs:
        path = Path(d).resolve()
        # a site-packages may live inside the checkout (.venv/): only the checkout itself is out
        if path.is_dir() and path != REPO and str(path) not in seen:
            seen.append(str(path))
    return seen


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--quiet", "-w", str(out)]
    if importlib.util.find_spec("hatchling") is not None:  # in the dev extras
        cmd.insert(cmd.index("--no-deps"), "--no-build-isolation")
    proc = _run(cmd, cwd=out, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(out.glob("claim_judge-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed and the runner's packages borrowed."""
    root = tmp_path_factory.mktemp("venv") / "v"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(root)], cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    python = root / "bin" / "python"
    proc = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                 "--no-index", "--quiet", str(wheel)], cwd=root.parent, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=root.parent).stdout.strip()
    (Path(purelib) / "zz_runner_site.pth").write_text(
        "".join(f"{d}\n" for d in _runner_site_packages()), encoding="utf-8")
    return root


def _env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAIM_JUDGE_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["OPENAI_API_KEY"] = "sk-test"
    env["NO_COLOR"] = "1"
    return env


def test_wheel_holds_the_data_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.relative_to(REPO / "prompts").as_posix()
                       for p in (REPO / "prompts").rglob("*.j2"))
    assert templates
    for rel in [*templates, "manifest.json"]:
        assert f"judge/_prompts/{rel}" in names, rel
    for path in [*(REPO / "judge" / "service" / "templates").iterdir(),
                 *(REPO / "judge" / "service" / "static").iterdir(),
                 *(REPO / "judge" / "config" / "profiles").glob("*.toml"),
                 *(REPO / "judge" / "config" / "heads").glob("*.json")]:
        assert path.relative_to(REPO).as_posix() in names, path
    assert "calibration/__init__.py" in names
    assert not any(n.startswith(("tests/", "research/", "gold/", "prompts/")) for n in names)
    assert not any("__pycache__" in n for n in names)


def test_wheel_is_typed_and_carries_the_one_version(wheel: Path) -> None:
    import tomllib

    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"judge/py.typed", "calibration/py.typed"} <= names
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert wheel.name.startswith(f"claim_judge-{version}-")


def test_sdist_leaves_research_out(tmp_path: Path) -> None:
    import tarfile

    builder = pytest.importorskip("hatchling.builders.sdist")
    path = next(builder.SdistBuilder(str(REPO)).build(directory=str(tmp_path)))
    with tarfile.open(path) as sdist:
        names = sdist.getnames()
    assert not any("/research/" in n for n in names)
    root = names[0].split("/")[0]
    for kept in ("judge/py.typed", "calibration/py.typed", "prompts/manifest.json",
                 "pyproject.toml"):
        assert f"{root}/{kept}" in names, kept


def test_installed_wheel_judges_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert not work.resolve().is_relative_to(REPO)
    env = _env(venv)
    python = str(venv / "bin" / "python")
    judge = str(venv / "bin" / "judge")

    # the judge package and its prompts come from the fresh venv, not the checkout
    proc = _run([python, "-c", "import judge, judge.models.prompts as p, sysconfig; "
                 "print(judge.__file__); print(p.prompts_dir()); "
                 "print(sysconfig.get_paths()['purelib'])"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    judge_file, prompts, purelib = (Path(line) for line in proc.stdout.split())
    assert judge_file == purelib / "judge" / "__init__.py"
    assert prompts == purelib / "judge" / "_prompts"
    assert not judge_file.resolve().is_relative_to(REPO)

    proc = _run([judge, "prompts", "check"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "prompts match the manifest" in proc.stdout

    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    shutil.copy(SAMPLE, work / "answers.jsonl")
    with OpenAIServer() as server:
        (work / "judge.toml").write_text(
            f'[judge]\nmodel = "openai/fake-judge"\nstrategy = "batch"\n'
            f'api_base = "{server.base_url}"\nretries = 1\ntimeout_s = 30\n', encoding="utf-8")
        proc = _run([judge, "run", "answers.jsonl", "--db", "out.db", "--json"], cwd=work,
                    env=env, timeout=180)
        splits, verifies = server.calls("split"), server.calls("verify")

    # every sample line is a valid record: none is rejected, so the exit code is 0. The
    # "self-graded" sample was generated by a qwen model: refused when the judge is a qwen
    # model (the embedded default), judged here, where the judge is another model.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["rejected_lines"] == []
    assert summary["refused_answers"] == []
    assert summary["answers"] == len(records)
    # judge.toml was read: the configured model answered, through the configured server
    assert summary["judge_version"].startswith("fake-judge@")
    assert splits and verifies
    assert {r["model"] for r in splits + verifies} == {"fake-judge"}
    assert summary["claims"] > 0
    assert summary["judge_errors"] == 0
    assert "judge_error" not in summary["labels"]
    assert sum(summary["labels"].values()) == summary["claims"]

    proc = _run([judge, "export", "--db", "out.db", "--format", "jsonl"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(rows) == summary["claims"]
    assert all(r["label"] and r["label"] != "judge_error" for r in rows)
    judged = {r["answer_id"] for r in rows}
    assert judged <= {r["id"] for r in records}
    assert "self-graded" in judged


def test_the_readme_quickstart_judges_the_samples_in_an_empty_folder(
        venv: Path, tmp_path: Path) -> None:
    """The README's quickstart after the install lines, with only the wheel: `judge init`,
    `judge doctor`, `judge run answers.jsonl --db judge.db` exit 0 against a local
    OpenAI-compatible server (given as $OPENAI_API_BASE, as a user's proxy would be)."""
    work = tmp_path / "work"
    work.mkdir()
    judge = str(venv / "bin" / "judge")
    with OpenAIServer() as server:
        env = {**_env(venv), "OPENAI_API_BASE": server.base_url}
        for argv in (["init"], ["doctor"], ["run", "answers.jsonl", "--db", "judge.db",
                                            "--json"]):
            proc = _run([judge, *argv], cwd=work, env=env, timeout=180)
            assert proc.returncode == 0, (argv, proc.stdout + proc.stderr)
    summary = json.loads(proc.stdout)
    assert summary["answers"] == 4 and summary["refused_answers"] == []
    assert summary["judge_errors"] == 0 and summary["claims"] > 0
