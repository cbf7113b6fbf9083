"""The end-to-end bench's Factcheck-GPT inputs: every distinct answer becomes a valid answer
record (before, five with URLs over the id limit were rejected as bad input and skipped)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from judge.records import AnswerRecord
from judge.records.models import MAX_ID_CHARS

BENCH = Path(__file__).resolve().parents[2] / "bench" / "end_to_end.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("end_to_end", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_factcheck_answer_is_a_valid_record() -> None:
    answers = _bench().factcheck_answers(1000)
    records = [AnswerRecord.model_validate(a) for a in answers]
    assert len(records) == len({a["id"] for a in answers}) == 89
    ids = [s.id for r in records for s in r.sources]
    assert max(len(i) for i in ids) <= MAX_ID_CHARS
    # the long URLs were shortened (kept readable: the head of the URL and a hash)
    assert any("~" in i and i.startswith("0:http") for i in ids)
    for r in records:
        assert len({s.id for s in r.sources}) == len(r.sources)


def test_the_limit_takes_the_first_answers_in_file_order() -> None:
    bench = _bench()
    first = bench.factcheck_answers(3)
    assert [a["id"] for a in first] == [a["id"] for a in bench.factcheck_answers(10)[:3]]
    assert len(first) == 3
