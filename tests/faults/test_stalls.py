"""No answer stalls a batch: sentence splitting is linear in the text (pysbd is never given
more than a bounded piece, and the pieces give the spans of the whole), and a finished answer
is committed within about a second whatever the next answer does (here: its model call hangs,
against the real HTTP fault server). No timed assertion: the bounds are structural."""

from __future__ import annotations

import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

import judge.text as text_module
from judge.text import PYSBD_CHUNK, split_sentences
from tests.faults.harness import (
    RECORDS,
    env,
    judge_cmd,
    stored_answers,
    wait_for,
    write_config,
    write_records,
)
from tests.support.openai_server import OpenAIServer


def _one_line(chars: int) -> str:
    rng = random.Random(1)
    words = ["the", "judge", "stores", "each", "call", "so", "that", "Dr.", "Smith", "of", "the", "U.S.", "Army", "can", "replay", "it", "on", "Oct.", "5", "at", "3", "p.m.", "in", "St.", "Louis", "with", "version", "3.2"]
    out: list[str] = []
    while sum(map(len, out)) < chars:
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(5, 20)))
        out.append(sentence.capitalize() + rng.choice([".", ".", "?", "!"]))
    return " ".join(out)


def _whole_text_pysbd_spans(text: str) -> list[tuple[int, int]]:
    """What split_sentences gave when pysbd read the whole text at once (the old way)."""
    from pysbd.processor import Processor

    found = Processor(text, text_module._pysbd_english(), char_span=True).process()
    return text_module._split(text, frozenset(text_module._sentence_starts(text, found)))


def test_pysbd_reads_bounded_pieces_that_give_the_spans_of_the_whole(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _one_line(20_000) + "\n\n" + _one_line(9_000)
    expected = _whole_text_pysbd_spans(text)
    from pysbd import processor

    lengths: list[int] = []
    real = processor.Processor.__init__

    def spy(self: Any, chunk: str, *args: Any, **kwargs: Any) -> None:
        lengths.append(len(chunk))
        real(self, chunk, *args, **kwargs)

    monkeypatch.setattr(processor.Processor, "__init__", spy)
    assert split_sentences(text) == expected
    assert lengths and max(lengths) <= PYSBD_CHUNK  # linear: bounded pieces
    assert sum(lengths) <= 2 * len(text)  # each character read at most about twice


def test_a_finished_answer_is_committed_while_the_next_one_hangs(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        # concurrency 1, input order: a2 is split and verified, then a1's split hangs
        write_records(tmp_path / "in.jsonl", [RECORDS[1], RECORDS[0]])
        write_config(tmp_path / "judge.toml", server.base_url, timeout_s=120.0)
        server.fault("hang", seconds=120, times=1, only="split", after=1)
        proc = subprocess.Popen(judge_cmd("run", "in.jsonl", "--db", "judge.db", "-c",
                                          "judge.toml", "--json"),
                                cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(lambda: len(server.calls("split")) >= 2, timeout=120)
            assert wait_for(lambda: stored_answers(tmp_path / "judge.db") >= 1, timeout=30), (
                "the finished answer was not committed while the next one hung")
            assert proc.poll() is None  # the run is still waiting for a1's split
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
