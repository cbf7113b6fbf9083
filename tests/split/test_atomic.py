"""The atomic-sentence rule (judge.split.atomic) and the split it spares (``split_atomic``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.split.atomic import all_atomic, atomic_reason
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM

ATOMIC = [
    "Python 3.11 added the tomllib module to the standard library.",
    "SQLite allows only one writer at a time on a database file.",
    "tomllib can also write TOML files.",
    "401 表示身分未確認。",
    "當天睡眠時間為 420 分鐘。",
    "候選筆記未提及團隊版的價格。",
    "團隊版不包含稽核紀錄。",
]

NOT_ATOMIC = {
    "The film was released in 1999 and directed by Sam Mendes.": "join",
    "In English, one token is about four characters on average.": "join",
    "It was released in 1999.": "refers",
    "This version added tomllib.": "refers",
    "The SM U-30, which sank in 1917, was a German submarine.": "join",
    "Is SQLite a server?": "question",
    "Hope this helps!": "checkable",
    "You should restart the server.": "checkable",
    "403 表示已認證但權限不足。": "join",
    "2026-03-05 的靜止心率是 61 bpm，baseline 平均 58.2。": "join",
    "它在 1999 年發布。": "refers",
    "這個版本在 2022 年發布。": "refers",
    "Python 與 SQLite 都是開源軟體。": "join",
    "The release notes list " + "many " * 20 + "changes.": "long",
    "台北市" + "的人口" * 12 + "很多。": "long",
}

REASONS = {"join": "join", "refers": "refers", "question": "question",
           "checkable": "nothing checkable", "long": "long"}


@pytest.mark.parametrize("text", ATOMIC)
def test_one_statement_that_joins_nothing_and_refers_to_nothing_is_atomic(text: str) -> None:
    assert atomic_reason(text) is None


@pytest.mark.parametrize(("text", "why"), sorted(NOT_ATOMIC.items()))
def test_what_the_split_could_change_is_not_atomic_and_says_why(text: str, why: str) -> None:
    reason = atomic_reason(text)
    assert reason is not None and REASONS[why] in reason, reason


def test_an_answer_needs_every_sentence_atomic() -> None:
    assert all_atomic(ATOMIC[:2], [False, False])
    assert not all_atomic([ATOMIC[0], "It was fast."], [False, False])
    assert not all_atomic([], [])


def _answers(tmp_path: Path) -> Path:
    source = {"id": "S1", "text": "Python 3.11 added the tomllib module to the standard "
                                  "library. tomllib only reads TOML files."}
    return write_jsonl(tmp_path / "in.jsonl", [
        {"id": "atomic", "answer": "Python 3.11 added the tomllib module to the standard "
                                   "library [S1]. tomllib can also write TOML files [S1].",
         "sources": [source]},
        {"id": "joined", "answer": "Python 3.11 added tomllib and it writes TOML [S1].",
         "sources": [source]},
    ])


def test_an_answer_of_atomic_sentences_is_judged_without_a_split_call(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = _answers(tmp_path)
    fast = config.model_copy(update={"split_atomic": True})
    judge_file(path, config=fast, db=store)
    splits = [c for c in fake_llm.calls if c["schema"].startswith("Split")]
    assert len(splits) == 1  # the joined answer only
    assert "writes TOML" in str(splits[0]["messages"])
    claims = {r["claim"]: r for r in store.verdict_rows() if r["answer_id"] == "atomic"}
    assert set(claims) == {"Python 3.11 added the tomllib module to the standard library.",
                           "tomllib can also write TOML files."}
    assert all(r["origin"] == "sentence" for r in claims.values())
    assert all(r["citations"] == [{"source": "S1"}] for r in claims.values())
    # judged like any claim: the unsupported one is not supported
    assert claims["tomllib can also write TOML files."]["label"] != "supported"
    # replayed: nothing called again, nothing duplicated
    before = len(fake_llm.calls)
    judge_file(path, config=fast, db=store)
    assert len(fake_llm.calls) == before
    assert sum(1 for r in store.verdict_rows() if r["answer_id"] == "atomic") == 2


def test_without_split_atomic_every_free_text_answer_is_split(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    judge_file(_answers(tmp_path), config=config, db=store)
    assert sum(c["schema"].startswith("Split") for c in fake_llm.calls) == 2
