"""The runnable example of docs/python-api.md (its first ```python block) runs offline, as a user
would run it: a ``judge.toml`` in the working directory (here named by ``$CLAIM_JUDGE_CONFIG``)
pins the scripted fake model, and the example prints the verdicts it got."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import FAKE_MODEL
from tests.fakes import FakeLLM

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def example() -> str:
    """The first ```python block, the example (tests/docs runs every block in order)."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## An example"):]
    return re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)[0]


def test_the_python_api_example_runs_and_prints_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    config = tmp_path / "judge.toml"
    config.write_text(f'[judge]\nmodel = "{FAKE_MODEL}"\nstrategy = "batch"\n', encoding="utf-8")
    monkeypatch.setenv("CLAIM_JUDGE_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)  # the example's store lands here
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example(), str(DOC), "exec"), {"__name__": "__main__"})
    printed = out.getvalue()
    # the fake judge: a claim found verbatim in its source is supported, else not_in_source
    assert re.search(r"^\s*supported\b.*401", printed, re.M), printed
    assert re.search(r"^\s*not_in_source\b.*403", printed, re.M), printed
    assert "label:not_in_source" in printed
    assert len(fake_llm.calls) == 2  # split + verify; the second pass came from the store
    assert (tmp_path / "judge.db").is_file()
