"""The CLI's surface as a new user meets it: --version, shell completion, help text on every
option, exit 64 for a bad --format, tables that keep ids whole in a pipe, no empty progress
bar, help paragraphs that wrap cleanly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.main
from rich.console import Console

import judge
from judge.cli import EXIT_USAGE, _register, app, reflow
from tests.cli.test_cli import AUTH, cli
from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def _judge(*args: str, columns: int | None = None,
           extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(extra_env or {})
    env["PYTHONPATH"] = str(ROOT)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "judge", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def _commands() -> list[tuple[str, object]]:
    _register()
    root = typer.main.get_command(app)
    found = []

    def walk(group: object, prefix: str) -> None:
        for name, sub in group.commands.items():  # type: ignore[attr-defined]
            if hasattr(sub, "commands"):
                walk(sub, f"{prefix}{name} ")
            else:
                found.append((f"{prefix}{name}", sub))

    walk(root, "")
    found.append(("(judge)", root))
    return found


def test_every_option_and_argument_of_every_command_has_help() -> None:
    commands = _commands()
    assert len(commands) > 15
    missing = [f"{name} {param.opts}" for name, cmd in commands
               for param in cmd.params  # type: ignore[attr-defined]
               if not (getattr(param, "help", None) or "").strip()]
    assert missing == []


def test_version_is_the_package_version() -> None:
    assert judge.__version__ == version("claim-judge")
    proc = _judge("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"claim-judge {version('claim-judge')}"


def test_shell_completion_is_offered() -> None:
    assert "--install-completion" in _judge("--help", columns=120).stdout
    # the shell named, not detected from the process tree (which differs under make, CI and a
    # terminal): Typer's own switch for that makes --show-completion take the shell's name
    proc = _judge("--show-completion", "bash",
                  extra_env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert proc.returncode == 0 and "COMPREPLY" in proc.stdout


@pytest.mark.parametrize("args", [
    ["export", "--format", "xml"],
    ["import", "x.json", "--format", "xml"],
    ["queue", "export", "--format", "xml"],
    ["queue", "import", "x.jsonl", "--annotator", "human:a", "--format", "xml"],
])
def test_a_bad_format_is_a_usage_error(args: list[str], tmp_path: Path) -> None:
    proc = _judge(*args, "--db", str(tmp_path / "none.db"))
    assert proc.returncode == EXIT_USAGE, proc.stdout + proc.stderr
    assert "--format must be" in proc.stderr


def test_tables_keep_whole_ids_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "a", "answer": "401 means unauthenticated [S1].", "sources": [AUTH]}])
    db = tmp_path / "j.db"
    assert cli("run", str(path), "--db", str(db), "--model",
               "fake/a-judge-model-with-a-rather-long-name-0123456789").returncode == 0
    versions = _judge("versions", "--db", str(db), "--json")
    ident = __import__("json").loads(versions.stdout)[0]["id"]
    assert len(ident) > 40
    for columns in (None, 60):  # a pipe, even when COLUMNS says the terminal is narrow
        table = _judge("versions", "--db", str(db), columns=columns)
        assert table.returncode == 0, table.stderr
        assert any(ident in line for line in table.stdout.splitlines()), table.stdout
        runs = _judge("runs", "--db", str(db), columns=columns)
        assert ident in runs.stdout, runs.stdout


def test_no_progress_bar_until_there_is_work(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.cli import common

    buffer = io.StringIO()
    monkeypatch.setattr(common, "console", Console(file=buffer, force_terminal=True, width=80))
    with common.progress_bar("judging"):
        pass  # drift with both versions stored: nothing to judge
    assert buffer.getvalue() == ""
    with common.progress_bar("judging") as progress:
        progress(0, 0)
        assert buffer.getvalue() == ""
        progress(1, 2)
    assert "judging" in buffer.getvalue() and "1/2" in buffer.getvalue()


def test_help_paragraphs_wrap_at_the_terminal_width() -> None:
    assert reflow("First.\n\n    Exit codes: 0 clean;\n    2 rejected.\n") == (
        "First.\n\nExit codes: 0 clean; 2 rejected.")
    width = 100
    help_text = _judge("run", "--help", columns=width).stdout
    lines = [line.strip() for line in help_text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("Exit codes:"))
    end = lines.index("", start)
    paragraph = lines[start:end]
    assert len(paragraph) >= 3
    # every line but the last is filled to near the width: no ragged docstring breaks
    assert all(len(line) > width - 20 for line in paragraph[:-1]), paragraph
