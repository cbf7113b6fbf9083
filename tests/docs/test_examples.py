"""Docs examples are tests: every code block of README.md and docs/python-api.md runs as
written, in order, in a fresh folder, against a real OpenAI-compatible server on 127.0.0.1
(tests/support/openai_server.py: no network beyond loopback).

How each kind of block runs:

- ``bash``: the block's lines in one ``bash -e`` process, in the folder and with the
  environment the previous blocks left (``cd`` and ``export`` carry over, as in a terminal).
  The provider's endpoint comes from ``$OPENAI_API_BASE`` (the server), as a user's would.
  Two kinds of line are changed, and only these: the wheel install lines (building the wheel,
  making and activating a venv, ``pip install dist/...``) are not run here, because
  ``tests/packaging/test_wheel.py`` builds and installs the wheel and runs the quickstart
  there; ``judge serve`` runs in the background on a free port until ``/review`` answers.
- ``python``: executed in one namespace shared by the document's Python blocks, in the same
  folder and environment.
- ``json``: parsed; an answer record is validated as one.
- no language (the README's ``make`` block): ``make -n`` checks that the targets exist.
- ``text``: prose in monospace (signatures), not code.

A block preceded by ``<!-- docs-test: skip: REASON -->`` is not run; the list of such blocks
is pinned below, so a new skip fails until it is reviewed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.records import AnswerRecord
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/python-api.md")
#: the blocks not run, by document and first line, with the reason in the document
SKIPPED = {("docs/python-api.md", "import ray")}
INSTALL = re.compile(r"^(python3? -m pip wheel |python3 -m venv |pip install dist/)")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    code: str
    skip: str | None

    @property
    def first(self) -> str:
        return self.code.strip().splitlines()[0] if self.code.strip() else ""


def blocks(doc: str) -> list[Block]:
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        start = FENCE.match(lines[i])
        if not start:
            i += 1
            continue
        indent, body, j = start["indent"], [], i + 1
        while not re.match(rf"^{indent}```\s*$", lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        before = next((x for x in reversed(lines[:i]) if x.strip()), "")
        skip = re.match(r"<!-- docs-test: skip: (.*) -->", before.strip())
        found.append(Block(doc, i + 1, start["lang"], "\n".join(body) + "\n",
                           skip[1] if skip else None))
        i = j + 1
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVE = """judge_serve() {
  judge serve "$@" --port "$DOCS_PORT" > serve.log 2>&1 & pid=$!
  for _ in $(seq 1 150); do
    if python -c "import sys, urllib.request as u; u.urlopen('http://127.0.0.1:$DOCS_PORT/review', timeout=2)" 2>/dev/null; then
      kill $pid; wait $pid 2>/dev/null || true; return 0
    fi
    kill -0 $pid 2>/dev/null || { cat serve.log >&2; return 1; }
    sleep 0.2
  done
  kill $pid; cat serve.log >&2; return 1
}
"""


def bash_script(code: str) -> str:
    out = []
    for line in code.splitlines():
        command = line.split("  #", 1)[0].strip()
        if INSTALL.match(command):
            out.append(f": not run here, see tests/packaging/test_wheel.py: {command!r}")
        elif command.startswith("judge serve "):
            out.append("judge_serve " + command.removeprefix("judge serve "))
        else:
            out.append(line)
    return SERVE + "\n".join(out) + "\n"


class Session:
    """The folder and environment the blocks of one document share, in order."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = folder, env
        self.namespace: dict[str, object] = {"__name__": "__main__"}

    def bash(self, block: Block) -> None:
        state = self.cwd.parent / "state.json"
        script = bash_script(block.code) + (
            f"python -c 'import json, os; json.dump({{\"cwd\": os.getcwd(), "
            f"\"env\": dict(os.environ)}}, open(\"{state}\", \"w\"))'\n")
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (f"{block.doc}:{block.line} exited {proc.returncode}\n"
                                      f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        left = json.loads(state.read_text())
        self.cwd, self.env = Path(left["cwd"]), left["env"]

    def python(self, block: Block, monkeypatch: pytest.MonkeyPatch) -> str:
        monkeypatch.chdir(self.cwd)
        for key in [k for k in os.environ if k not in self.env]:
            monkeypatch.delenv(key)
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block.code, f"{block.doc}:{block.line}", "exec"), self.namespace)
        return printed.getvalue()


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[Session]:
    folder = tmp_path / "fresh"
    folder.mkdir()
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAIM_JUDGE_", "OPENAI_", "PYTEST_"))}
    env.update({"HOME": str(tmp_path / "home"), "NO_COLOR": "1", "COLUMNS": "100",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "DOCS_PORT": str(_free_port()), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    with OpenAIServer() as server:
        env["OPENAI_API_BASE"] = server.base_url
        yield Session(folder, env)


def test_the_skipped_blocks_are_the_pinned_ones() -> None:
    skipped = {(b.doc, b.first) for doc in DOCS for b in blocks(doc) if b.skip}
    assert skipped == SKIPPED


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_runs_in_order_in_a_fresh_folder(
        doc: str, session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = []
    for block in blocks(doc):
        if block.skip or block.lang == "text":
            continue
        if block.lang in ("bash", "sh"):
            session.bash(block)
        elif block.lang in ("python", "py"):
            session.python(block, monkeypatch)
        elif block.lang == "json":
            value = json.loads(block.code)
            if isinstance(value, dict) and {"answer", "sources"} <= set(value):
                AnswerRecord.model_validate(value)
        elif block.lang in ("", "toml"):
            targets = [line.split()[1] for line in block.code.splitlines()
                       if line.startswith("make ")]
            proc = subprocess.run(["make", "-n", *targets], cwd=ROOT, capture_output=True,
                                  text=True, timeout=60)
            assert targets and proc.returncode == 0, proc.stderr
        else:
            pytest.fail(f"{doc}:{block.line}: no runner for ```{block.lang}")
        ran.append(block.line)
    assert len(ran) >= 5


def test_readme_commands_judge_the_samples_and_store_them(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the README's blocks leave behind: the quickstart's samples judged, none refused,
    no judge_error, and a review queue built."""
    for block in blocks("README.md"):
        if block.lang == "bash":
            session.bash(block)
    import judge

    db = session.cwd / "judge.db"
    runs = judge.Store.open(db)
    try:
        verdicts = runs.rows("select label from verdicts", [])
        statuses = runs.rows("select answer_id, status from run_answers", [])
        queues = runs.rows("select id from queues", [])
    finally:
        runs.close()
    assert verdicts and all(v["label"] != "judge_error" for v in verdicts)
    assert {s["answer_id"] for s in statuses} >= {"http-401-403", "retry-budget"}
    assert {s["status"] for s in statuses} <= {"judged"}, statuses  # none refused
    assert queues
