"""``split_claims`` v3 with an atomic rule: only the sentences that are not atomic are split,
the atomic ones are claims as they stand and the model reads them as context."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.models.prompts import render
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, rule_responder, split_sentences_of

SOURCE = {"id": "S1", "text": "Python 3.11 added the tomllib module to the standard library. "
                              "tomllib only reads TOML files."}
ATOMIC = "Python 3.11 added the tomllib module to the standard library."
REFERS = "It only reads TOML files."
GREETING = "Hope this helps!"


def _path(tmp_path: Path, answer: str) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [{"id": "mixed", "answer": answer,
                                                "sources": [SOURCE]}])


def _v3(config: JudgeConfig, rule: bool | str = "atomic/v2") -> JudgeConfig:
    return config.model_copy(update={"split_atomic": rule,
                                     "prompts": {**config.prompts, "split_claims": "v3"}})


def _splits(fake: FakeLLM) -> list[dict[str, Any]]:
    return [c for c in fake.calls if c["schema"].startswith("Split")]


def _context(user: str) -> list[str]:
    return re.findall(r"<<(DATA-[0-9a-f]{16}) context\n(.*?)\n\1>>", user, re.S)


def _rows(store: Store) -> list[dict[str, Any]]:
    return list(store.verdict_rows())  # in claim order


def test_only_the_sentences_that_are_not_atomic_are_given_to_the_split(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = _path(tmp_path, f"{ATOMIC[:-1]} [S1]. {REFERS[:-1]} [S1]. {GREETING}")
    judge_file(path, config=_v3(config), db=store)
    (split,) = _splits(fake_llm)
    user = split["messages"][-1]["content"]
    # each under its number in the answer; citation markers are taken out of the text
    assert [(n, t.strip()) for n, t in split_sentences_of(user)] == [
        ("2", REFERS), ("3", GREETING)]
    assert [body for _, body in _context(user)] == [ATOMIC]
    rows = _rows(store)
    assert [(r["claim"], r["origin"]) for r in rows] == [
        (ATOMIC, "sentence"), (REFERS, "split"), (GREETING, "split")]
    assert rows[0]["citations"] == [{"source": "S1"}] == rows[1]["citations"]
    # replayed with 0 calls, nothing duplicated
    before = len(fake_llm.calls)
    judge_file(path, config=_v3(config), db=store)
    assert len(fake_llm.calls) == before and len(_rows(store)) == 3


def test_the_models_claims_and_skips_land_on_the_sentences_it_was_given(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """The model splits sentence 2 and skips sentence 3; its skip of the context sentence 1
    (a small model lists the question frame so) is ignored: sentence 1 is a claim."""

    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        if "Split" in schema:
            return json.dumps({
                "claims": [{"sentence": 2, "text": "tomllib only reads TOML files.",
                            "kind": "fact"}],
                "skipped": [{"sentence": 1, "reason": "question"},
                            {"sentence": 3, "reason": "greeting"}]})
        return rule_responder(schema, messages)

    fake_llm.responder = responder
    judge_file(_path(tmp_path, f"{ATOMIC} {REFERS} {GREETING}"), config=_v3(config), db=store)
    rows = _rows(store)
    assert [(r["claim"], r["origin"]) for r in rows] == [
        (ATOMIC, "sentence"), ("tomllib only reads TOML files.", "split")]
    assert all(r["label"] != "judge_error" for r in rows)
    skipped = [(r["sentence"], r["text"], r["reason"]) for r in store.db["split_skips"].rows]
    assert skipped == [(3, GREETING, "greeting")]


@pytest.mark.parametrize(("sentence", "error"), [
    (3, "sentence numbers that do not exist: [3]"),
    (1, "sentences it was given as context only: [1]"),
])
def test_a_claim_of_a_sentence_not_given_to_split_is_an_error_not_a_claim(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM, sentence: int,
    error: str,
) -> None:
    """Fail closed: a claim naming no sentence of the answer, or one it read as context."""

    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        if "Split" in schema:
            return json.dumps({"claims": [
                {"sentence": 2, "text": REFERS, "kind": "fact"},
                {"sentence": sentence, "text": "Python 3.11 added tomllib.", "kind": "fact"}]})
        return rule_responder(schema, messages)

    fake_llm.responder = responder
    judge_file(_path(tmp_path, f"{ATOMIC} {REFERS}"), config=_v3(config), db=store)
    (row,) = _rows(store)
    assert row["label"] == "judge_error" and row["origin"] == "unsplit"
    assert error in row["error"]


def test_a_split_that_finds_nothing_leaves_the_atomic_claims_and_judges_the_rest(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """No claim from the split is no error when the atomic sentences hold claims; the
    sentence the model neither claimed nor skipped is judged as it stands."""

    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        return json.dumps({"claims": []}) if "Split" in schema else rule_responder(
            schema, messages)

    fake_llm.responder = responder
    judge_file(_path(tmp_path, f"{ATOMIC} {REFERS}"), config=_v3(config), db=store)
    assert [(r["claim"], r["origin"]) for r in _rows(store)] == [
        (ATOMIC, "sentence"), (REFERS, "uncovered")]


def test_without_an_atomic_rule_v3_splits_every_sentence_with_no_context(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    judge_file(_path(tmp_path, f"{ATOMIC} {REFERS}"), config=_v3(config, rule=False), db=store)
    (split,) = _splits(fake_llm)
    user = split["messages"][-1]["content"]
    assert [t.strip() for _, t in split_sentences_of(user)] == [ATOMIC, REFERS]
    assert _context(user) == []
    assert all(r["origin"] == "split" for r in _rows(store))


def test_a_sentence_after_the_last_split_one_is_no_context(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """The first sentence is split; the atomic one after it is a claim, and no context."""
    joined = "Python 3.11 added tomllib and it reads TOML."
    judge_file(_path(tmp_path, f"{joined} {ATOMIC}"), config=_v3(config), db=store)
    user = _splits(fake_llm)[0]["messages"][-1]["content"]
    assert [t.strip() for _, t in split_sentences_of(user)] == [joined]
    assert _context(user) == [] and "context" not in user
    assert [(r["claim"], r["origin"]) for r in _rows(store)] == [
        (joined, "split"), (ATOMIC, "sentence")]


def test_v3_without_context_renders_v2s_messages_to_the_byte() -> None:
    data = {"question": "What did 3.11 add?", "sentences": [ATOMIC, REFERS], "max_claims": 40}
    v2 = render("split_claims", "v2", **data)
    v3 = render("split_claims", "v3", **data)
    assert v3.messages == v2.messages and v3.sha256 != v2.sha256
    with_context = render("split_claims", "v3", context="Earlier.", **data)
    assert with_context.messages[0]["content"].split("The frame token")[0] == \
        v2.messages[0]["content"].split("The frame token")[0]
    assert "context only: not to split" in with_context.messages[1]["content"]


def test_an_atomic_sentence_between_two_split_ones_is_split_with_them(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """The model reads one run of sentences with no gap in their numbers (a small model
    numbers the frames it reads in turn); the atomic ones before and after are claims."""
    joined = "Python 3.11 added tomllib and it reads TOML."
    answer = f"{ATOMIC} {REFERS} {ATOMIC} {joined} {ATOMIC}"
    judge_file(_path(tmp_path, answer), config=_v3(config), db=store)
    user = _splits(fake_llm)[0]["messages"][-1]["content"]
    assert [(n, t.strip()) for n, t in split_sentences_of(user)] == [
        ("2", REFERS), ("3", ATOMIC), ("4", joined)]
    assert [body for _, body in _context(user)] == [ATOMIC]
    assert [r["origin"] for r in _rows(store)] == ["sentence", "split", "split", "split",
                                                   "sentence"]
