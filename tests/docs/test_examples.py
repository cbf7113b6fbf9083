"""Docs examples are tests: every code block of the documents in ``DOCS`` (the README and every
``docs/*.md``, so a new document is covered when it is added) runs as written, in order, one document per session in a fresh folder, against a real OpenAI-compatible server on
127.0.0.1 (tests/support/openai_server.py: no network beyond loopback) that answers with the
scripted rule of :func:`tests.fakes.contradicting_responder`: a claim whose words all occur in
a source is ``supported``; one that begins as a source sentence does (its first two words)
and adds a word no source has is ``contradicted``; any other is ``not_in_source``. What a
block prints is compared with the output the document shows.

**Output convention.** A ```text block that directly follows a runnable block (nothing but
blank lines between) is that block's output: what a reader running the document's blocks in
order would see. Python blocks: standard output; a block that prints must show it. Shell
blocks: standard output and standard error as one stream, as a terminal shows them; shown
where it is the point (a block showing none is checked for its exit status only, ``bash -e``).
Before comparing, trailing spaces and leading or trailing blank lines are dropped, and the
shown output may hold one placeholder for what changes from run to run (run ids, durations,
judge version hashes, costs):

- ``…`` inside a line matches any text on that line (also none);
- a line that is ``…`` alone matches any number of lines (also none).

Any other ```text block (one after prose) is prose in monospace (a signature), not run.

How each kind of block runs:

- ``bash``: the block's lines in one ``bash -e`` process, in the folder and with the
  environment the previous blocks left (``cd`` and ``export`` carry over, as in a terminal).
  The provider's endpoint comes from ``$OPENAI_API_BASE`` (the server), as a user's would.
  Two kinds of line are changed, and only these: the wheel install lines (building the wheel,
  making and activating a venv, ``pip install dist/...``) are not run here, because
  ``tests/packaging/test_wheel.py`` builds and installs the wheel and runs the quickstart
  there; ``judge serve`` runs in the background on a free port (``$DOCS_PORT``) once ``/review``
  answers, and stays up for the document's later blocks (a second ``judge serve`` stops the
  first, as a reader would; the last one stops with the session). The one substitution in a
  line: ``http://127.0.0.1:8000`` (the default address, which ``curl`` lines call) becomes
  ``http://127.0.0.1:$DOCS_PORT``; the tokens are the document's own (its ``export
  CLAIM_JUDGE_TOKENS=...``).
- ``python``: executed in one namespace shared by the document's Python blocks, in order, in
  the same folder and environment (as a reader would run them in one session: a name one
  block rebinds is rebound for the blocks after it).
- ``json``: parsed (strict JSON: illustrative output with comments or elisions is a ```text
  block); an answer record is validated as one.
- ``toml``: a judge config (or a fragment of one, such as a ``[review]`` table alone), written
  to a file of its own (never the session's ``judge.toml``) and read as ``--config`` reads it
  (:meth:`judge.config.JudgeConfig.load`), then checked as ``judge run`` checks its plan
  (:func:`judge.plan.check_plan`: a setting the strategy does not read, a prompt left
  unpinned), so a document showing an invalid setting fails.
- no language (the README's ``make`` block): ``make -n`` checks that the targets exist.

A block preceded by ``<!-- docs-test: skip: REASON -->`` is not run; the list of such blocks
is pinned below, so a new skip fails until it is reviewed.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.records import AnswerRecord
from tests.fakes import contradicting_responder
from tests.support.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
#: the blocks not run, by document and first line, with the reason in the document
SKIPPED = {
    ("docs/python-api.md", "import ray"),
    ("docs/review.md", "judge run answers.jsonl --db judge.db"),  # the lifecycle at a glance
    ("docs/review.md", "judge queue threshold --db judge.db --gold gold.jsonl        "
                       "# or, without --gold, the reviews decided in the store"),
    ("docs/review.md", "judge queue build --db judge.db"),
    ("docs/review.md", "judge eval-gold gold.jsonl --db judge.db          "
                       "# the hosted default: a support on every claim"),
    ("docs/review.md", "judge review add ITEM_ID --label supported -a alice --db judge.db"
                       "          # or a claim id, or answer:<id>"),
    ("docs/review.md", "import argilla as rg"),
    ("docs/review.md", "import json"),
    ("docs/review.md", "judge export --db judge.db --format datasette-metadata -o metadata.json"),
    ("docs/calibration.md", "judge eval-gold gold/regression.jsonl --db out/regression.db "
                            "--config judge.toml"),
    ("docs/chinese.md", "judge run answers.jsonl --db judge.db        "
                        "# Chinese answers tagged zh, the others untagged"),
    ("docs/extending.md", 'register(StrategySpec("my_strategy", '
                          '"judge.decide.my_strategy:MyStrategy",'),
    ("docs/fit.md", "# 1. judge, build the queue, review (see the review docs); or have a gold "
                    "file of your claims"),
    ("docs/fit.md", "[judge.domain_rules.support-tickets]"),  # a fragment
    ("docs/fit.md", "[judge]"),  # the heads judge fit writes
    ("docs/large-batches.md", "judge run in.jsonl --db judge.db --batch-file out/x.jsonl   "
                              "# writes the splits' requests, exit 4"),
    ("docs/probe.md", "export CLAIM_JUDGE_GGUF=/models/my-model-q4_k_m.gguf"),
    ("docs/probe.md", "llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf --alias "
                      "qwen2.5-7b-instruct \\"),
    ("docs/probe.md", "vllm serve Qwen/Qwen2.5-7B-Instruct --served-model-name "
                      "qwen2.5-7b-instruct --port 8081 \\"),
    ("docs/probe.md", "export OPENAI_API_KEY=none                     "
                      "# the servers ask for no key; litellm wants one"),
}
#: the address ``curl`` lines call (``judge serve``'s default), and what it becomes here
SERVED_AT = "http://127.0.0.1:8000"
SERVED_HERE = "http://127.0.0.1:$DOCS_PORT"
INSTALL = re.compile(r"^(python3? -m pip wheel |python3 -m venv |pip install dist/)")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
RUNNABLE = ("bash", "sh", "python", "py", "json", "toml", "")
#: the placeholder of the shown output: any text in a line, or alone on a line any lines
ANY = "…"


@dataclass
class Block:
    doc: str
    line: int
    end: int
    lang: str
    code: str
    skip: str | None
    #: the output the document shows for this block (the ```text block right after it)
    output: str | None = None

    @property
    def first(self) -> str:
        return self.code.strip().splitlines()[0] if self.code.strip() else ""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    """The document's fenced blocks, each runnable one with its shown output attached (the
    ```text block that follows it is then not listed on its own)."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
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
        block = Block(doc, i + 1, j + 1, start["lang"], "\n".join(body) + "\n",
                      skip[1] if skip else None)
        last = found[-1] if found else None
        if (block.lang == "text" and last is not None and last.lang in RUNNABLE
                and last.output is None
                and not any(x.strip() for x in lines[last.end:block.line - 1])):
            last.output = block.code
        else:
            found.append(block)
        i = j + 1
    return found


def _tidy(text: str) -> list[str]:
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n").splitlines()


def shown_pattern(shown: str) -> re.Pattern[str]:
    """The shown output as a pattern over the printed lines (see the module docstring)."""
    parts = []
    for line in _tidy(shown):
        if line.strip() == ANY:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(r"[^\n]*?".join(re.escape(x) for x in line.split(ANY)) + r"\n")
    return re.compile("".join(parts))


def assert_shown(block: Block, printed: str) -> None:
    """What ``block`` printed is the output its document shows (placeholders aside)."""
    assert block.output is not None
    got = "\n".join(_tidy(printed)) + "\n" if printed.strip() else ""
    if shown_pattern(block.output).fullmatch(got):
        return
    diff = "\n".join(difflib.unified_diff(_tidy(block.output), _tidy(printed), "shown",
                                          "printed", lineterm=""))
    pytest.fail(f"{block.where}: the output shown is not what the block prints "
                f"(fix the document or the code; {ANY!r} stands for what changes from run to "
                f"run)\n{diff}", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVE = """judge_serve() {
  if [ -s "$DOCS_SERVED" ]; then
    old=$(cat "$DOCS_SERVED"); kill $old 2>/dev/null || true
    while kill -0 $old 2>/dev/null; do sleep 0.1; done
    : > "$DOCS_SERVED"
  fi
  judge serve "$@" --port "$DOCS_PORT" > serve.log 2>&1 & pid=$!
  for _ in $(seq 1 150); do
    if python -c "import sys, urllib.request as u; u.urlopen('http://127.0.0.1:$DOCS_PORT/review', timeout=2)" 2>/dev/null; then
      echo $pid > "$DOCS_SERVED"; return 0
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
            out.append(line.replace(SERVED_AT, SERVED_HERE))
    return SERVE + "\n".join(out) + "\n"


class Session:
    """The folder and environment the blocks of one document share, in order."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = folder, env
        self.namespace: dict[str, object] = {"__name__": "__main__"}

    def bash(self, block: Block) -> str:
        """Run a shell block; what it printed (standard output and error, as one stream)."""
        state = self.cwd.parent / "state.json"
        script = bash_script(block.code) + (
            f"python -c 'import json, os; json.dump({{\"cwd\": os.getcwd(), "
            f"\"env\": dict(os.environ)}}, open(\"{state}\", \"w\"))'\n")
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=self.cwd, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=600)
        assert proc.returncode == 0, (f"{block.where} exited {proc.returncode}\n"
                                      f"{proc.stdout[-5000:]}")
        left = json.loads(state.read_text())
        self.cwd, self.env = Path(left["cwd"]), left["env"]
        return proc.stdout

    def python(self, block: Block, monkeypatch: pytest.MonkeyPatch) -> str:
        """Run a Python block in the document's namespace; what it printed."""
        monkeypatch.chdir(self.cwd)
        for key in [k for k in os.environ if k not in self.env]:
            monkeypatch.delenv(key)
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block.code, block.where, "exec"), self.namespace)
        return printed.getvalue()

    def toml(self, block: Block) -> None:
        """Read a ``toml`` block as ``--config`` reads a file, and check it as ``judge run``
        checks its plan."""
        from judge.config import JudgeConfig
        from judge.plan import check_plan

        path = self.cwd.parent / f"toml-{block.line}" / "judge.toml"
        path.parent.mkdir()
        path.write_text(block.code, encoding="utf-8")
        try:
            check_plan(JudgeConfig.load(path))
        except Exception as exc:  # a ValidationError, a SetupError: the doc is wrong
            pytest.fail(f"{block.where}: the config shown is not one the judge reads (fix the "
                        f"document, or mark a fragment that cannot stand alone <!-- "
                        f"docs-test: skip: REASON -->)\n{exc}", pytrace=False)

    def stop(self) -> None:
        """Stop the server a ``judge serve`` line left running."""
        served = Path(self.env["DOCS_SERVED"])
        pid = served.read_text().strip() if served.exists() else ""
        if not pid:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)
            for _ in range(100):
                os.kill(int(pid), 0)
                time.sleep(0.1)

    def run(self, block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
        """Run one block and hold what it printed to the output its document shows."""
        if block.lang in ("bash", "sh"):
            printed = self.bash(block)
        elif block.lang in ("python", "py"):
            printed = self.python(block, monkeypatch)
            assert block.output is not None or not printed.strip(), (
                f"{block.where} prints but shows no output: add a ```text block right after "
                f"it with what it prints\n{printed}")
        elif block.lang == "toml":
            self.toml(block)
            printed = ""
        elif block.lang == "json":
            value = json.loads(block.code)
            if isinstance(value, dict) and {"answer", "sources"} <= set(value):
                AnswerRecord.model_validate(value)
            printed = ""
        elif block.lang == "":
            targets = [line.split()[1] for line in block.code.splitlines()
                       if line.startswith("make ")]
            assert targets, f"{block.where}: a block without a language runs make targets only"
            proc = subprocess.run(["make", "-n", *targets], cwd=ROOT, capture_output=True,
                                  text=True, timeout=60)
            assert proc.returncode == 0, proc.stderr
            printed = ""
        else:
            pytest.fail(f"{block.where}: no runner for ```{block.lang}; mark it "
                        "<!-- docs-test: skip: REASON --> or give it a runnable language")
        if block.output is not None:
            assert_shown(block, printed)


@contextlib.contextmanager
def open_session(tmp_path: Path) -> Iterator[Session]:
    """A fresh folder and home under ``tmp_path``, and the scripted server, for one document."""
    folder = tmp_path / "fresh"
    folder.mkdir()
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAIM_JUDGE_", "OPENAI_", "PYTEST_"))}
    env.update({"HOME": str(tmp_path / "home"), "NO_COLOR": "1", "COLUMNS": "100",
                "PYTHONUNBUFFERED": "1",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "DOCS_PORT": str(_free_port()), "DOCS_SERVED": str(tmp_path / "served.pid"),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    with OpenAIServer(responder=contradicting_responder) as server:
        env["OPENAI_API_BASE"] = server.base_url
        session = Session(folder, env)
        try:
            yield session
        finally:
            session.stop()


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[Session]:
    with open_session(tmp_path) as opened:
        yield opened


def test_the_skipped_blocks_are_the_pinned_ones() -> None:
    skipped = {(b.doc, b.first) for doc in DOCS for b in blocks(doc) if b.skip}
    assert skipped == SKIPPED


def test_shown_output_matches_with_placeholders_only_where_they_stand() -> None:
    shown = "run run-…\n…\nlabels  supported 1, contradicted 1\n"
    pattern = shown_pattern(shown)
    assert pattern.fullmatch("run run-ee6e4bd81fd1\nlabels  supported 1, contradicted 1\n")
    assert pattern.fullmatch("run run-1\na\nb\nlabels  supported 1, contradicted 1\n")
    assert not pattern.fullmatch("run run-1\nlabels  supported 2\n")
    assert not pattern.fullmatch("run job-1\nlabels  supported 1, contradicted 1\n")
    assert not pattern.fullmatch("run run-1\nlabels  supported 1, contradicted 1\nmore\n")


def test_an_output_block_belongs_to_the_block_right_before_it(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nprint(1)\n```\n\n```text\n1\n```\n\nProse.\n\n```text\n"
                   "judge.f(x) -> y\n```\n", encoding="utf-8")
    found = blocks(str(doc))  # an absolute path: ROOT / doc is doc
    assert [(b.lang, b.output) for b in found] == [("python", "1\n"),
                                                   ("text", None)]


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_runs_in_order_and_prints_what_is_shown(
        doc: str, session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = []
    for block in blocks(doc):
        if block.skip or block.lang == "text":
            continue
        session.run(block, monkeypatch)
        ran.append(block.line)
    fences = sum(1 for line in (ROOT / doc).read_text(encoding="utf-8").splitlines()
                 if FENCE.match(line)) // 2
    shown = [b for b in blocks(doc) if b.output is not None]
    assert len(blocks(doc)) + len(shown) == fences, f"{doc}: a fenced block was not read"


def test_readme_commands_judge_the_samples_and_store_them(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the README's blocks leave behind: the quickstart's samples judged, none refused,
    no judge_error, the planted contradiction caught, and a review queue built."""
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
    assert "contradicted" in {v["label"] for v in verdicts}  # retry-budget's "five times"
    assert {s["answer_id"] for s in statuses} >= {"http-401-403", "retry-budget"}
    assert {s["status"] for s in statuses} <= {"judged"}, statuses  # none refused
    assert queues


def _toml(tmp_path: Path, code: str) -> None:
    (tmp_path / "fresh").mkdir(parents=True)
    Session(tmp_path / "fresh", {}).toml(Block("doc.md", 3, 9, "toml", code, None))


def test_a_toml_block_is_read_as_the_judge_reads_a_config_file(tmp_path: Path) -> None:
    _toml(tmp_path, '[judge]\nmodel = "openai/gpt-4.1"\nstrategy = "batch"\n')
    _toml(tmp_path / "b", "[review]\ntarget_recall = 0.95\nreviewers_per_item = 2\n")
    with pytest.raises(pytest.fail.Exception, match="temperatur"):  # a typo
        _toml(tmp_path / "c", '[judge]\nmodel = "openai/gpt-4.1"\ntemperatur = 0.0\n')
    with pytest.raises(pytest.fail.Exception, match="target_recall"):  # out of range
        _toml(tmp_path / "d", "[review]\ntarget_recall = 1.5\n")
    with pytest.raises(pytest.fail.Exception, match="split_claims"):  # judge run's plan check
        _toml(tmp_path / "e", '[judge]\nstrategy = "probe"\nprompts = { probe_claim = "v2" }\n'
                              'probe_head = { file = "builtin:uniform", sha256 = "a69ab0b9de353d7'
                              'ab1a80b2caf53b8e22586f9e2b74d2890e6c6f4f04f865d41" }\n')


def test_curl_lines_call_the_served_port_and_nothing_else_changes() -> None:
    script = bash_script("curl -sw '\\n' http://127.0.0.1:8000/v1/health  # ok\n"
                         "echo http://127.0.0.1:8001/\n")
    assert "curl -sw '\\n' http://127.0.0.1:$DOCS_PORT/v1/health  # ok\n" in script
    assert "echo http://127.0.0.1:8001/\n" in script
