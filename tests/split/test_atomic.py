"""The atomic-sentence rule (judge.split.atomic) and the split it spares (``split_atomic``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.split.atomic import RULES, all_atomic, atomic_reason
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

#: atomic under atomic/v2 only: a short leading phrase of time, place or manner, its comma,
#: and one atomic statement
LEADING = [
    "In English, one token is about four characters on average.",
    "On 1 September 2009, Gmail suffered another outage for several hours.",
    "According to the manual, SQLite allows one writer at a time.",
    "Today, Python 3.13 is the newest release.",
    "在英文中，一個 token 約為四個字元。",
    "截至 2024 年，台北市人口約 250 萬。",
    "一般來說，401 表示身分未確認。",
]

#: a leading phrase and its comma, yet not atomic under atomic/v2 either
NOT_LEADING = {
    # the phrase states something of its own
    "In addition to compression, BPE can be used for encryption.": "own",
    "In contrast to SQLite, PostgreSQL runs as a server.": "own",
    "在價格之外，團隊版不包含稽核紀錄。": "own",
    # no listed opening: the comma joins as under atomic/v1
    "Unlike SQLite, PostgreSQL runs as a server.": "join",
    # the phrase is a clause or too long to be a qualifier
    "In 2018 she began her daily SiriusXM show, The Michelle Collins Show.": "long",
    "According to the 2020 national census of the island, Taipei has 2.6 million people.":
        "long",
    "在台北舉辦的會議，有三百人參加。": "clause",
    # the phrase or the rest joins or refers
    "In 2019, Apple and Google released new phones.": "join",
    "In this release, Python 3.11 added tomllib.": "refers",
    "In 2019, Python 3.8, a minor release, added the walrus operator.": "join",
    "In 2019, it won an award.": "refers",
}

REASONS = {"join": "join", "refers": "refers", "question": "question",
           "checkable": "nothing checkable", "long": "long", "own": "of its own",
           "clause": "clause"}


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("text", ATOMIC)
def test_one_statement_that_joins_nothing_and_refers_to_nothing_is_atomic(
        text: str, rule: str) -> None:
    assert atomic_reason(text, rule=rule) is None


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize(("text", "why"), sorted(NOT_ATOMIC.items()))
def test_what_the_split_could_change_is_not_atomic_and_says_why(
        text: str, why: str, rule: str) -> None:
    reason = atomic_reason(text, rule=rule)
    assert reason is not None and REASONS[why] in reason, reason


@pytest.mark.parametrize("text", LEADING)
def test_a_short_leading_phrase_and_its_comma_are_atomic_from_v2_on(text: str) -> None:
    assert atomic_reason(text, rule="atomic/v2") is None
    reason = atomic_reason(text, rule="atomic/v1")
    assert reason is not None and "joins" in reason, reason


@pytest.mark.parametrize(("text", "why"), sorted(NOT_LEADING.items()))
def test_a_leading_phrase_that_is_more_than_a_qualifier_is_not_atomic(
        text: str, why: str) -> None:
    reason = atomic_reason(text, rule="atomic/v2")
    assert reason is not None and REASONS[why] in reason, reason


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="atomic/v1, atomic/v2"):
        atomic_reason(ATOMIC[0], rule="atomic/v9")


def test_the_config_names_the_rule_and_true_is_the_first() -> None:
    from judge import version_of

    base = JudgeConfig()
    configs = {value: JudgeConfig.model_validate({**base.model_dump(), "split_atomic": value})
               for value in (False, True, "atomic/v1", "atomic/v2")}
    assert [c.atomic_rule for c in configs.values()] == [
        None, "atomic/v1", "atomic/v1", "atomic/v2"]
    ids = {value: version_of(c) for value, c in configs.items()}
    assert ids[True] == ids["atomic/v1"]  # one rule, one version id
    assert len({ids[False], ids[True], ids["atomic/v2"]}) == 3
    with pytest.raises(ValueError, match="split_atomic"):
        JudgeConfig.model_validate({**base.model_dump(), "split_atomic": "atomic/v9"})


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


def test_the_rule_the_config_names_decides_which_answers_skip_the_split(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    source = {"id": "S1", "text": "In English, one token is about four characters."}
    path = write_jsonl(tmp_path / "lead.jsonl", [
        {"id": "lead", "answer": "In English, one token is about four characters [S1].",
         "sources": [source]}])
    origins = {}
    for rule in (True, "atomic/v2"):  # each in its own store: nothing served from the other
        store = Store.open(tmp_path / f"{rule}.db")
        before = len(fake_llm.calls)
        judge_file(path, config=config.model_copy(update={"split_atomic": rule}), db=store)
        splits = sum(c["schema"].startswith("Split") for c in fake_llm.calls[before:])
        rows = [r for r in store.verdict_rows() if r["answer_id"] == "lead"]
        origins[rule] = (splits, [(r["claim"], r["origin"]) for r in rows])
        store.close()
    claim = "In English, one token is about four characters."
    assert origins[True][0] == 1 and [o for _, o in origins[True][1]] == ["split"]
    assert origins["atomic/v2"] == (0, [(claim, "sentence")])


def test_without_split_atomic_every_free_text_answer_is_split(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    judge_file(_answers(tmp_path), config=config, db=store)
    assert sum(c["schema"].startswith("Split") for c in fake_llm.calls) == 2
